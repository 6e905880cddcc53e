"""Teams and their API keys.

A key is "ko_" + 43 random url-safe characters, shown to the operator once.
Only its sha256 is stored. Lookup narrows by the non-secret 8-char prefix and
then compares hashes with hmac.compare_digest, so a lookup's timing does not
reveal how much of a guessed key matched.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelopt.storage.models import ApiKey, Team, utcnow

KEY_PREFIX = "ko_"
PREFIX_LEN = 8


class TeamExists(ValueError):
    pass


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_team(session: Session, name: str) -> Team:
    name = name.strip()
    if not name:
        raise ValueError("a team needs a non-empty name")
    team = Team(name=name)
    session.add(team)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise TeamExists(f"team {name!r} already exists") from None
    return team


def get_team_by_name(session: Session, name: str) -> Team | None:
    return session.scalar(select(Team).where(Team.name == name))


def create_api_key(session: Session, team_id: int) -> str:
    """Create a key for the team and return it in full; it cannot be recovered later."""
    if session.get(Team, team_id) is None:
        raise ValueError(f"no team with id {team_id}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiKey(team_id=team_id, prefix=key[:PREFIX_LEN], key_hash=hash_key(key)))
    session.commit()
    return key


def authenticate(session: Session, key: str | None) -> Team | None:
    """The team owning this (unrevoked) key, or None."""
    if not key or not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    digest = hash_key(key)
    candidates = session.scalars(
        select(ApiKey).where(ApiKey.prefix == key[:PREFIX_LEN], ApiKey.revoked_at.is_(None))).all()
    for candidate in candidates:
        if hmac.compare_digest(candidate.key_hash, digest):
            return session.get(Team, candidate.team_id)
    return None


def revoke_api_key(session: Session, key: str) -> bool:
    row = session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key), ApiKey.revoked_at.is_(None)))
    if row is None:
        return False
    row.revoked_at = utcnow()
    session.commit()
    return True


def list_teams(session: Session) -> list[tuple[Team, int, int]]:
    """Every team, oldest first, with its number of active (unrevoked) keys and of all its keys."""
    active = func.count(ApiKey.id).filter(ApiKey.revoked_at.is_(None))
    rows = session.execute(select(Team, active, func.count(ApiKey.id))
                           .outerjoin(ApiKey, ApiKey.team_id == Team.id).group_by(Team.id).order_by(Team.id))
    return [(team, n_active, n_all) for team, n_active, n_all in rows]


def list_api_keys(session: Session, team_id: int | None = None) -> list[tuple[ApiKey, str]]:
    """The keys (their stored rows: prefix, dates; never a key) with their team's name, oldest first."""
    query = select(ApiKey, Team.name).join(Team, Team.id == ApiKey.team_id).order_by(ApiKey.id)
    if team_id is not None:
        query = query.where(ApiKey.team_id == team_id)
    return [(key, name) for key, name in session.execute(query)]


def find_api_key(session: Session, ref: str) -> ApiKey | None:
    """The key row `ref` names: its id (as `kernelopt keys list` shows it) or the whole key."""
    ref = ref.strip()
    if ref.isdigit():
        return session.get(ApiKey, int(ref))
    if ref.startswith(KEY_PREFIX):
        return session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(ref)))
    return None


def revoke_api_key_row(session: Session, row: ApiKey) -> bool:
    """Revoke the key of this row (False where it already was); authenticate() refuses it from now on."""
    if row.revoked_at is not None:
        return False
    row.revoked_at = utcnow()
    session.commit()
    return True
