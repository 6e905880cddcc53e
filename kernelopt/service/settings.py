"""One configuration object for the whole service (API, workers, admin CLI).

Everything comes from KERNELOPT_* environment variables (or a .env file).
With no database or broker configured the service runs embedded: SQLite under
data_dir and an in-process dispatcher, so one command starts everything.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELOPT_", env_file=".env", extra="ignore")

    database_url: str | None = None  # None => embedded SQLite at {data_dir}/kernelopt.db
    broker_url: str | None = None  # redis://...; None => embedded in-process dispatcher
    data_dir: Path = Path(".kernelopt")  # blobs under data_dir/blobs, job workdirs under data_dir/jobs
    max_upload_bytes: int = 50 * 1024 * 1024
    max_queued_jobs_per_team: int = 20
    job_time_limit_s: float = 1800
    heartbeat_interval_s: float = 10
    heartbeat_timeout_s: float = 60
    max_job_attempts: int = 3
    # API: a key that was revoked keeps working for up to this many seconds in an API
    # process that had just accepted it (0: look every key up on every request).
    auth_cache_ttl_s: float = 10.0
    api_db_threads: int = 6  # requests doing database work at once, per API process
    # The sandbox of submitted code (isolation.sandbox; docs/operations.md, Threat model).
    sandbox: bool = True  # KERNELOPT_SANDBOX=off runs submitted code unconfined (trusted, single-user only)
    sandbox_allow_missing: bool = False  # start in multi-team mode even with a sandbox layer missing
    sandbox_uid_base: int = 61000  # each job runs as its own uid from [base, base + count) (service as root)
    sandbox_uid_count: int = 1000
    sandbox_bwrap: str | None = None  # bubblewrap's path (default: `bwrap` on PATH)
    # Each team's compiler caches (Inductor's autotune timings, compiled kernels), kept between its
    # jobs under data_dir/compile-cache (isolation.compile_cache); a tree past the size is dropped. Off by
    # default until a GPU run shows the kept caches compiling (docs/operations.md, Compiler caches).
    compile_cache: bool = False
    compile_cache_max_bytes: int = 4 << 30

    @field_validator("sandbox", "compile_cache", mode="before")
    @classmethod
    def _on_off(cls, v):
        return {"on": True, "off": False}.get(v.strip().lower(), v) if isinstance(v, str) else v

    @field_validator("sandbox_uid_base", "sandbox_uid_count")
    @classmethod
    def _uid_range(cls, v: int) -> int:
        if not 1 <= v < 2**31:
            raise ValueError("sandbox uids must be unprivileged (>= 1000 for the base) and < 2^31")
        return v
    # Artifacts a worker copies out of a job's work directory (worker/artifacts.py): a file
    # larger than the first, or one that would take the job past the second, is not stored.
    # Sizes are apparent sizes (st_size), so a sparse file counts fully.
    max_artifact_bytes: int = 128 * 1024 * 1024
    max_job_artifact_bytes: int = 512 * 1024 * 1024
    # Open event streams (GET /v1/jobs/{id}/events) per team: counted over all API processes in
    # Redis when a broker is configured, per API process otherwise. Past it: 429.
    max_sse_streams_per_team: int = 50

    @field_validator("database_url", "broker_url", mode="before")
    @classmethod
    def _empty_is_none(cls, v):
        # An empty env var (KERNELOPT_DATABASE_URL=) means "not configured", not a broken URL.
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("postgres://") or v.startswith("postgresql://"):
            # Plain postgresql:// would pick psycopg2, which is not installed; we ship psycopg 3.
            return "postgresql+psycopg://" + v.split("://", 1)[1]
        if not (v.startswith("postgresql+psycopg://") or v.startswith("sqlite")):
            raise ValueError(f"KERNELOPT_DATABASE_URL must be a postgresql:// or sqlite:// URL, got {v!r}")
        return v

    @field_validator("broker_url")
    @classmethod
    def _known_broker(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("redis://", "rediss://")):
            raise ValueError(f"KERNELOPT_BROKER_URL must be a redis:// URL, got {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Settings":
        for name in ("max_upload_bytes", "max_queued_jobs_per_team", "job_time_limit_s",
                     "heartbeat_interval_s", "heartbeat_timeout_s", "max_job_attempts",
                     "max_artifact_bytes", "max_job_artifact_bytes", "max_sse_streams_per_team",
                     "compile_cache_max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"KERNELOPT_{name.upper()} must be positive")
        if self.auth_cache_ttl_s < 0 or self.api_db_threads < 1:
            raise ValueError("KERNELOPT_AUTH_CACHE_TTL_S must be >= 0 and KERNELOPT_API_DB_THREADS >= 1")
        if self.sandbox_uid_base < 1000:
            raise ValueError("KERNELOPT_SANDBOX_UID_BASE must be >= 1000 (never a system or the service's uid)")
        # A timeout shorter than the beat interval would re-queue healthy jobs.
        if self.heartbeat_timeout_s <= self.heartbeat_interval_s:
            raise ValueError("KERNELOPT_HEARTBEAT_TIMEOUT_S must exceed KERNELOPT_HEARTBEAT_INTERVAL_S")
        return self

    @property
    def embedded(self) -> bool:
        return self.database_url is None or self.broker_url is None

    @property
    def effective_database_url(self) -> str:
        if self.database_url is not None:
            return self.database_url
        return f"sqlite:///{(Path(self.data_dir) / 'kernelopt.db').resolve()}"

    @property
    def blobs_dir(self) -> Path:
        return Path(self.data_dir) / "blobs"

    @property
    def jobs_dir(self) -> Path:
        return Path(self.data_dir) / "jobs"


class ConfigError(RuntimeError):
    """Configuration is invalid; the message says which variable and why."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, validated once at start-up (fail fast, clear message)."""
    try:
        return Settings()
    except ValidationError as e:
        lines = [f"  {'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in e.errors()]
        raise ConfigError("invalid KernelOPT configuration:\n" + "\n".join(lines)) from None
