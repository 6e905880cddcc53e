"""Dashboard sessions: a signed cookie, never the API key itself.

Signing in with an API key sets `ko_session`, an HttpOnly, SameSite=Strict cookie holding
`<payload>.<HMAC-SHA256>` where the payload is (api key row id, team id, expiry, nonce). The key
is checked once at sign-in and never stored. The nonce is the session's id: a `ui_sessions` row
keyed by its SHA-256 holds the session server-side, and every request needs that row (and an
unrevoked key row), so signing out (the row is deleted) or revoking the key ends the session even
for a copy of the cookie. The signature only spares the database forged cookies. The CSRF token
of a session is HMAC(secret, "csrf:" + nonce): forms carry it and every POST compares it
(SameSite=Strict is the first line, the token the second).

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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select

from kernelopt.storage.models import ApiKey, Team, utcnow
from kernelopt.storage.models import UiSession as Row

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


# ---------------------------------------------------------------- the server-side record

def row_id(s: UiSession) -> str:
    """The row's key: a hash of the nonce, so the table never holds a usable session id."""
    return hashlib.sha256(b"ui-session:" + s.nonce.encode()).hexdigest()


def store(db: Any, s: UiSession) -> None:
    """Record a new session (and sweep expired ones: sign-in is rare enough to pay for it)."""
    db.execute(delete(Row).where(Row.expires_at < utcnow()))
    db.add(Row(id=row_id(s), key_id=s.key_id, team_id=s.team_id,
               expires_at=datetime.fromtimestamp(s.expires, timezone.utc)))
    db.commit()


def team_of(db: Any, s: UiSession) -> tuple[int, str] | None:
    """(team id, name) when the session's row exists, is unexpired and its key unrevoked; else None.
    Read on every request, never cached: a sign-out elsewhere must count at once."""
    row = db.execute(select(Team.id, Team.name).join(ApiKey, ApiKey.team_id == Team.id)
                     .join(Row, Row.key_id == ApiKey.id)
                     .where(Row.id == row_id(s), Row.team_id == Team.id, ApiKey.id == s.key_id,
                            Team.id == s.team_id, Row.expires_at > utcnow(), ApiKey.revoked_at.is_(None))).first()
    return (row.id, row.name) if row is not None else None


def drop(db: Any, s: UiSession) -> None:
    """Sign-out: the row goes, so the cookie (any copy of it) is refused from now on."""
    db.execute(delete(Row).where(Row.id == row_id(s)))
    db.commit()
