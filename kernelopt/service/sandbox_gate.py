"""Whether the service may run jobs with the sandbox this machine gives.

The service serves several teams; a job runs a stranger's code. So `serve`
and `worker` probe the sandbox's layers at start, log which are off, and
refuse to start in multi-team mode (distributed, or a database with more than
one team) while a layer is off, unless the operator opted out with
KERNELOPT_SANDBOX_ALLOW_MISSING=true (or switched the sandbox off). /readyz
reports the same status.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from kernelopt.isolation.sandbox import Layers, SandboxPolicy, blocking_ancestor, probe_layers
from kernelopt.storage.db import make_engine
from kernelopt.storage.models import Team

log = logging.getLogger("kernelopt.sandbox")


def policy_from_settings(settings) -> SandboxPolicy:
    """The engine reads its sandbox policy from KERNELOPT_SANDBOX*; make them the settings' values.

    Settings also come from a `.env` file the engine never reads, so the
    service exports what it validated before any job starts.
    """
    os.environ["KERNELOPT_SANDBOX"] = "on" if settings.sandbox else "off"
    os.environ["KERNELOPT_SANDBOX_UID_BASE"] = str(settings.sandbox_uid_base)
    os.environ["KERNELOPT_SANDBOX_UID_COUNT"] = str(settings.sandbox_uid_count)
    if settings.sandbox_bwrap:
        os.environ["KERNELOPT_SANDBOX_BWRAP"] = settings.sandbox_bwrap
    return SandboxPolicy.from_env()


@dataclass(frozen=True)
class SandboxStatus:
    layers: Layers
    multi_team: bool
    allow_missing: bool

    @property
    def missing(self) -> list[str]:
        return self.layers.off()

    @property
    def may_run(self) -> bool:
        return not self.missing or not self.multi_team or self.allow_missing

    def check(self) -> str:
        """The /readyz entry: `ok`, or what is off (and whether that was allowed)."""
        if not self.missing:
            return f"ok: all layers ({self.layers.mechanism})"
        why = self.layers.describe()
        if not self.may_run:
            return f"refused: {why}"
        return f"degraded ({'operator opt-out' if self.allow_missing else 'single team'}): {why}"


def _team_count(settings, engine=None) -> int:
    own = engine is None
    engine = engine or make_engine(settings.effective_database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Team)).scalar() or 0)
    except Exception:  # noqa: BLE001 - no schema yet: nothing but what `serve` is about to create
        return 0
    finally:
        if own:
            engine.dispose()


def sandbox_status(settings, engine=None) -> SandboxStatus:
    """The sandbox's layers and whether this service may run jobs with them (`engine`: the API's, if any)."""
    policy = policy_from_settings(settings)
    layers = probe_layers(policy)
    multi = (not settings.embedded) or _team_count(settings, engine) > 1
    return SandboxStatus(layers, multi, settings.sandbox_allow_missing or not settings.sandbox)


def prepare_data_dir(settings) -> str | None:
    """Keep the service's files from the jobs' uids; None, or why jobs could not reach their directories.

    Jobs find their own directory under `jobs/` by its path (0711: no listing);
    the blob store and the SQLite file are the service's alone.
    """
    data, jobs, blobs = Path(settings.data_dir).resolve(), Path(settings.jobs_dir).resolve(), \
        Path(settings.blobs_dir).resolve()
    for d, mode in ((data, 0o711), (jobs, 0o711), (blobs, 0o700)):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, mode)
    db = data / "kernelopt.db"
    if settings.database_url is None and db.exists():
        os.chmod(db, 0o600)
    blocked = blocking_ancestor(jobs / "x")
    if blocked is not None and settings.sandbox and os.geteuid() == 0:
        return (f"{blocked} (above KERNELOPT_DATA_DIR) is not traversable by other users, so jobs running "
                "as their own uid cannot reach their work directories: chmod o+x it or move the data directory")
    return None


def require_sandbox(settings, who: str) -> str | None:
    """Log the sandbox's layers; the reason to refuse starting, or None."""
    unreachable = prepare_data_dir(settings)
    if unreachable:
        return f"{who}: {unreachable}"
    status = sandbox_status(settings)
    log.warning("%s: %s", who, status.layers.describe()) if status.missing else log.info(
        "%s: %s", who, status.layers.describe())
    if status.may_run:
        return None
    return (f"{who}: refusing to run jobs of several teams without the whole sandbox — "
            f"{status.layers.describe()}.\nInstall bubblewrap (Debian: apt-get install bubblewrap) and run the "
            "service as root so that it can drop each job to its own uid, or set "
            "KERNELOPT_SANDBOX_ALLOW_MISSING=true to accept the missing layers (docs/operations.md, Threat model).")
