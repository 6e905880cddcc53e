"""Dashboard sessions: a signed cookie, never the API key itself.

Signing in with an API key sets `ko_session`, an HttpOnly, SameSite=Strict cookie holding
`<payload>.<HMAC-SHA256>` where the payload is (api key row id, team id, expiry, nonce). The key
is checked once at sign-in and never stored; every request re-checks that the key row is still
unrevoked, so revoking a key ends its sessions too. The CSRF token of a session is
HMAC(secret, "csrf:" + nonce): forms carry it and every POST compares it (SameSite=Strict is the
first line, the token the second).

The secret is KERNELOPT_UI_SECRET, or a random one kept in `$KERNELOPT_DATA_DIR/ui-session.key`
(mode 0600; the data directory is shared by API replicas, so they agree on it).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

COOKIE = "ko_session"
TTL_S = 12 * 3600


@dataclass(frozen=True)
class UiSession:
    key_id: int
    team_id: int
    expires: int
    nonce: str


def load_secret(data_dir: str | os.PathLike) -> bytes:
    env = os.environ.get("KERNELOPT_UI_SECRET")
    if env:
        return env.encode()
    path = Path(data_dir) / "ui-session.key"
    try:
        return bytes.fromhex(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".ui-session.key.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    try:
        os.link(tmp, path)  # the first replica to get here wins; the others read its secret
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return bytes.fromhex(path.read_text().strip())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, b"session:" + payload.encode(), hashlib.sha256).digest())


def new_session(key_id: int, team_id: int, now: float | None = None) -> UiSession:
    return UiSession(key_id=key_id, team_id=team_id, expires=int((now or time.time()) + TTL_S),
                     nonce=secrets.token_urlsafe(16))


def encode(secret: bytes, s: UiSession) -> str:
    payload = _b64(json.dumps([s.key_id, s.team_id, s.expires, s.nonce], separators=(",", ":")).encode())
    return f"{payload}.{_mac(secret, payload)}"


def decode(secret: bytes, value: str | None, now: float | None = None) -> UiSession | None:
    """The session in a cookie value, or None when it is missing, forged, malformed or expired."""
    if not value or len(value) > 512 or value.count(".") != 1:
        return None
    payload, mac = value.split(".")
    if not hmac.compare_digest(mac, _mac(secret, payload)):
        return None
    try:
        key_id, team_id, expires, nonce = json.loads(_unb64(payload))
        s = UiSession(key_id=int(key_id), team_id=int(team_id), expires=int(expires), nonce=str(nonce))
    except (ValueError, TypeError):
        return None
    return s if s.expires > (now or time.time()) else None


def csrf_token(secret: bytes, s: UiSession) -> str:
    return _b64(hmac.new(secret, b"csrf:" + s.nonce.encode(), hashlib.sha256).digest())


def csrf_ok(secret: bytes, s: UiSession, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(str(token), csrf_token(secret, s))
