"""Adversarial submissions against the whole service (issue 7, part 5).

Two deployments, each with real processes: the embedded one (`kernelopt serve`
with SQLite and its in-process dispatcher) and the distributed one (`kernelopt
serve` on PostgreSQL + Redis, and `kernelopt worker` running Celery). In each,
team B first runs a harmless job through the API, so that it has a job, an
uploaded file and artifacts (report.md, optimized_module.py, ...) stored. Then
team A submits hostile kernel files through the API (see adversarial_payloads):

- intrusion: reads the environment for credentials (its own and, through
  /proc, its ancestors': the worker's or server's) and uses them (inserts an
  API key for team B and calls the API with it), reads the SQLite file and the
  blob store, writes outside its directory (the data dir, the blob store, the
  server's and the worker's working directories, /tmp, KernelOPT's own
  packages), tampers with team B's blobs and rows, connects to the API,
  PostgreSQL and Redis on 127.0.0.1, starts a `setsid` daemon, writes a 6 GiB
  sparse file under an artifact name, and swaps its events.jsonl for a link
  to team B's events blob (for the worker, which reads that file, to follow);
- fork bomb: 10,000 processes;
- memory: reserves past the sandbox's address-space limit, in a marked process
  and in the load child;
- traps: leaves a FIFO, links (outside, to team B's blob) and a directory at
  the names the trusted side (the job's orchestrator, the worker) writes or
  reads after the sandboxed children;
- the breaks of issue 36, one test each: links at experience.jsonl and
  transcripts.jsonl planted by the search's child while the orchestrator
  appends to them (break 1; the transcripts job asks for the `llm` generator,
  configured at a port where nothing answers), a reply that calls JobContext
  when unpickled (break 2), 8 GiB into the sandbox's /tmp and a 1 GiB reply
  while team B polls the API (break 3), a file forging every verdict (break
  4) that also writes 150 event lines of 1 MiB (break 5) and prints lines
  forging the end of team B's job into the service's log (break 6).

Every outcome is observed from outside the job: database rows and blob bytes
before and after, files that appear, Redis keys, the API's request metrics,
the artifacts and events team A can download, the service's log, team B's
answers, and a /proc watcher that counts the processes of each job while it
runs, samples their memory (in and out of the sandbox) and the machine's
shared memory, and looks for survivors after it.

`KERNELOPT_SANDBOX=off pytest tests/service/test_adversarial.py` shows the
attacks are real: each sandbox case fails (the link and FIFO cases hold, as
their defence is the worker's and the orchestrator's own, not the sandbox's).
Sizes for that demonstration: ADV_FORK_COUNT (default 10000) and ADV_MEMORY_GIB
(default 20; reserved MAP_NORESERVE and never touched) — cap the fork bomb
(e.g. 1500) when the sandbox is off, or it can exhaust a shared machine — and
ADV_TMP_FILL_GIB (default 8: with the sandbox off it goes to the host's /tmp,
whose file teardown removes).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from kernelopt.isolation.sandbox import Rlimits, SandboxPolicy
from tests.service import adversarial_payloads as payloads
from tests.service.api.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
TERMINAL = ("succeeded", "failed", "cancelled", "crashed")
GiB = 1 << 30
FORK_COUNT = int(os.environ.get("ADV_FORK_COUNT", "10000"))
MEMORY_GIB = int(os.environ.get("ADV_MEMORY_GIB", "20"))
LIMITS = Rlimits()
POLICY = SandboxPolicy.from_env()  # the service's too: KERNELOPT_SANDBOX* pass to it (tmpfs size, largest reply)
TMP_FILL_GIB = int(os.environ.get("ADV_TMP_FILL_GIB", "8"))  # into the sandbox's /tmp (break 3): a tmpfs of POLICY.tmp_bytes
REPLY_MIB = 1024  # the load child's reply (break 3): refused past POLICY.max_reply_bytes
TRUSTED_RSS_BUDGET = 1536 << 10  # KiB: the orchestrator, the server and the worker never hold a 1 GiB reply
EVENT_LINES = 150  # of 1 MiB each (break 5)
SANDBOX_OFF = os.environ.get("KERNELOPT_SANDBOX", "on").strip().lower() in ("off", "0", "false", "no")

pytestmark = pytest.mark.timeout(900)


# --------------------------------------------------------------------------- processes, seen from outside

def _processes():
    """(pid, cmdline, cwd) of every process on the machine (best effort: they come and go)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        try:
            cwd = os.readlink(f"/proc/{d}/cwd")
        except OSError:
            cwd = ""
        yield int(d), cmd, cwd


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as {field: value} ({} for a process gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _kib(status: dict[str, str], name: str) -> int:
    """A `kB` field of /proc/<pid>/status or /proc/meminfo (VmPeak, VmHWM, Shmem, ...); 0 if absent."""
    try:
        return int(status.get(name, "0").split()[0])
    except (ValueError, IndexError):
        return 0


def _sandboxed(status: dict[str, str]) -> bool:
    """In a PID namespace of its own (a sandboxed child): its NSpid names more than one pid."""
    return len(status.get("NSpid", "").split()) > 1


def _shmem_kib() -> int:
    """The machine's shared memory: tmpfs pages, the sandboxes' /tmp among them."""
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    return _kib({k: v.strip() for k, _, v in (line.partition(":") for line in meminfo)}, "Shmem")


@dataclass
class Seen:
    most_at_once: int = 0
    vm_peak_kib: int = 0
    vm_peak_cmd: str = ""
    first_at: float = 0.0  # time.monotonic() when a process of the job was first seen, and last
    last_at: float = 0.0
    # the largest resident peak (VmHWM) of a process of the job outside the sandbox (the orchestrator, which runs
    # as the job's uid and reads its children's replies; bubblewrap), and inside it
    trusted_rss_kib: int = 0
    trusted_rss_cmd: str = ""
    sandboxed_rss_kib: int = 0
    shmem_peak_kib: int = 0  # the machine's Shmem at its highest while the job's processes were seen


class ProcWatch(threading.Thread):
    """Samples /proc while jobs run: per job, the most processes alive at once, the largest VmPeak, the largest
    resident peak in and out of the sandbox, when it ran, and the machine's Shmem meanwhile.

    A process belongs to a job if its working directory is inside the job's directory (every
    process the engine starts for a job runs there) or its command line carries one of the job's
    markers (what the payloads start).
    """

    def __init__(self):
        super().__init__(name="adv-proc-watch", daemon=True)
        self.jobs: dict[str, tuple[str, ...]] = {}  # job id -> markers
        self.seen: dict[str, Seen] = {}
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self.shmem_base_kib = _shmem_kib()  # before any attack

    def track(self, job_id: str, *markers: str) -> None:
        with self._lock:
            self.jobs[job_id] = markers
            self.seen.setdefault(job_id, Seen())

    def members(self, job_id: str, markers: tuple[str, ...]) -> list[tuple[int, str]]:
        me = os.getpid()
        return [(pid, cmd) for pid, cmd, cwd in _processes() if pid != me
                and (job_id in cwd or any(m in cmd for m in markers))]

    def run(self) -> None:
        while not self._halt.wait(0.2):
            with self._lock:
                jobs = dict(self.jobs)
            if not jobs:
                continue
            procs = list(_processes())
            shmem = _shmem_kib()
            for job_id, markers in jobs.items():
                mine = [(pid, cmd) for pid, cmd, cwd in procs
                        if job_id in cwd or any(m in cmd for m in markers)]
                seen = self.seen[job_id]
                seen.most_at_once = max(seen.most_at_once, len(mine))
                if mine:
                    seen.first_at = seen.first_at or time.monotonic()
                    seen.last_at = time.monotonic()
                    seen.shmem_peak_kib = max(seen.shmem_peak_kib, shmem)
                for pid, cmd in mine:
                    status = _status(pid)
                    peak, rss = _kib(status, "VmPeak"), _kib(status, "VmHWM")
                    if peak > seen.vm_peak_kib:
                        seen.vm_peak_kib, seen.vm_peak_cmd = peak, cmd[:200]
                    if _sandboxed(status):
                        seen.sandboxed_rss_kib = max(seen.sandboxed_rss_kib, rss)
                    elif rss > seen.trusted_rss_kib:
                        seen.trusted_rss_kib, seen.trusted_rss_cmd = rss, cmd[:200]

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def survivors(job_id: str, markers: tuple[str, ...], grace_s: float = 5.0) -> list[str]:
    """Processes of the job still alive (not zombies) `grace_s` after it ended."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = [f"{pid} {cmd[:160]}" for pid, cmd, cwd in _processes()
                 if pid != os.getpid() and (job_id in cwd or any(m in cmd for m in markers))
                 and _state(pid) not in ("Z", "X", "?")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.25)


def kill_marked(marker: str) -> int:
    """SIGKILL every process whose command line or working directory carries `marker` (teardown)."""
    n = 0
    for _ in range(5):
        found = [pid for pid, cmd, cwd in _processes() if pid != os.getpid() and (marker in cmd or marker in cwd)]
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                n += 1
        if not found:
            break
        time.sleep(0.5)
    return n


# --------------------------------------------------------------------------- the deployment

CANARY = uuid.uuid4().hex[:12]
SECRETS_IN_ENV = {  # what a service's environment holds besides its own settings
    "OPENAI_API_KEY": f"sk-adv-canary-{CANARY}-openai",
    "AWS_SECRET_ACCESS_KEY": f"adv-canary-{CANARY}-aws",
    "KERNELOPT_LLM_API_KEY": f"adv-canary-{CANARY}-llm",
}
DB_PASSWORD = f"advcanary{CANARY}pw"  # in the PostgreSQL URL (the machine's PostgreSQL trusts 127.0.0.1)


@dataclass
class Team:
    id: int
    name: str
    key: str


@dataclass
class Deployment:
    mode: str
    root: Path
    data_dir: Path
    server_cwd: Path
    worker_cwd: Path
    db_url: str  # SQLAlchemy URL of the service's database
    url: str  # the API
    api_port: int
    redis_url: str
    redis_db: int
    canary_pg_dsn: str  # PostgreSQL database the payload reaches over loopback (the service's, or the tests')
    marker: str
    team_a: Team = None
    team_b: Team = None
    b_job: dict = None
    b_blobs: dict[str, str] = field(default_factory=dict)  # artifact or "input" -> sha256
    b_bytes: dict[str, bytes] = field(default_factory=dict)  # sha256 -> bytes, before any attack
    procs: list = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    @property
    def blobs_dir(self) -> Path:
        return self.data_dir / "blobs"

    def blob_path(self, sha: str) -> Path:
        return self.blobs_dir / sha[:2] / sha[2:4] / sha

    def headers(self, team: Team) -> dict:
        return {"Authorization": f"Bearer {team.key}"}

    def engine(self):
        from tests.service.conftest import get_engine

        return get_engine(self.db_url)

    def log_tail(self) -> str:
        return "\n".join(f"----- {p.name} -----\n{p.read_text(errors='replace')[-4000:]}" for p in self.logs
                         if p.exists())


def _service_env(dep: Deployment, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELOPT_") or k.startswith("KERNELOPT_SANDBOX")}
    env.update(SECRETS_IN_ENV)
    env.update(KERNELOPT_DATA_DIR=str(dep.data_dir), KERNELOPT_JOB_TIME_LIMIT_S="300",
               PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **extra)
    return env


def _start(dep: Deployment, name: str, argv: list[str], cwd: Path, env: dict, ready) -> subprocess.Popen:
    log = dep.root / f"{name}.log"
    dep.logs.append(log)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    dep.procs.append(proc)
    deadline = time.monotonic() + 120
    while not ready():
        assert proc.poll() is None, f"{name} exited with {proc.returncode}\n{dep.log_tail()}"
        assert time.monotonic() < deadline, f"{name} not ready after 120 s\n{dep.log_tail()}"
        time.sleep(0.3)
    return proc


def _api_ready(url: str):
    def ready() -> bool:
        try:
            return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False
    return ready


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process (a supervisor passes it on), then SIGKILL what is left of its tree."""
    from kernelopt.isolation.child import descendants

    tree = descendants(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
    for pid in [proc.pid] + tree:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


def _make_teams(db_url: str) -> tuple[Team, Team]:
    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.storage.db import make_sessionmaker
    from tests.service.conftest import get_engine

    out = []
    with make_sessionmaker(get_engine(db_url))() as s:
        for who in ("a", "b"):
            name = f"adv-team-{who}-{CANARY}-{uuid.uuid4().hex[:6]}"
            team = create_team(s, name)
            out.append(Team(team.id, name, create_api_key(s, team.id)))
    return out[0], out[1]


def submit(dep: Deployment, team: Team, filename: str, content: bytes, options: dict | None = None) -> str:
    r = httpx.post(f"{dep.url}/v1/jobs", headers=dep.headers(team), timeout=30,
                   files={"file": (filename, content, "text/x-python")},
                   data={"options": json.dumps(options or {"time_budget_s": 240})})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def wait_job(dep: Deployment, team: Team, job_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = httpx.get(f"{dep.url}/v1/jobs/{job_id}", headers=dep.headers(team), timeout=30)
        assert r.status_code == 200, r.text
        job = r.json()
        if job["status"] in TERMINAL:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']} after {timeout} s\n{dep.log_tail()}"
        time.sleep(0.3)


def artifacts(dep: Deployment, team: Team, job_id: str) -> dict[str, tuple[int, bytes | str]]:
    """name -> (HTTP status, bytes) of each of the job's artifacts, downloaded as `team`."""
    r = httpx.get(f"{dep.url}/v1/jobs/{job_id}/artifacts", headers=dep.headers(team), timeout=30)
    assert r.status_code == 200, r.text
    out = {}
    for item in r.json()["items"]:
        d = httpx.get(f"{dep.url}/v1/jobs/{job_id}/artifacts/{item['name']}", headers=dep.headers(team), timeout=60)
        out[item["name"]] = (d.status_code, d.content if d.status_code == 200 else d.text)
    return out


def unmatched_requests(dep: Deployment) -> float:
    """Requests to paths the API has no route for, from its own metrics."""
    text = httpx.get(f"{dep.url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("kernelopt_http_requests_total{") and 'route="unmatched"' in line)


@pytest.fixture(scope="module", params=["embedded", "celery"])
def deployment(request, tmp_path_factory, redis_url):
    mode = request.param
    root = tmp_path_factory.mktemp(f"adv-{mode}")
    os.chmod(root, 0o711)
    redis_db = int(redis_url.rsplit("/", 1)[1])
    with contextlib.ExitStack() as stack:
        if mode == "embedded":
            from kernelopt.storage.db import upgrade_database

            db_url = f"sqlite:///{root / 'data' / 'kernelopt.db'}"
            upgrade_database(db_url)
            canary_pg = request.getfixturevalue("pg_url")
        else:
            from tests.service.conftest import _dispose_engine, fresh_postgres_database

            db_url = stack.enter_context(fresh_postgres_database("kernelopt_adv", on_drop=_dispose_engine))
            canary_pg = db_url
        service_db_url = db_url if mode == "embedded" else db_url.replace("postgres@", f"postgres:{DB_PASSWORD}@")
        port = free_port()
        dep = Deployment(mode=mode, root=root, data_dir=root / "data", server_cwd=root / "server-cwd",
                         worker_cwd=REPO if mode == "celery" else root / "server-cwd", db_url=db_url,
                         url=f"http://127.0.0.1:{port}", api_port=port, redis_url=redis_url, redis_db=redis_db,
                         canary_pg_dsn=canary_pg.replace("postgresql+psycopg://", "postgresql://"),
                         marker=f"advm{uuid.uuid4().hex[:10]}")
        dep.server_cwd.mkdir()
        dep.team_a, dep.team_b = _make_teams(db_url)
        stack.callback(_teardown, dep)
        extra = {} if mode == "embedded" else {"KERNELOPT_DATABASE_URL": service_db_url,
                                               "KERNELOPT_BROKER_URL": redis_url}
        # An LLM is configured (a job may ask for the `llm` generator, whose client writes transcripts.jsonl) at a
        # port where nothing listens: each call fails at once, and is recorded like any other.
        extra.update(KERNELOPT_LLM_MODEL="adv-no-such-model", KERNELOPT_LLM_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
                     KERNELOPT_LLM_MAX_RETRIES="0", KERNELOPT_LLM_TIMEOUT_S="10")
        env = _service_env(dep, **extra)
        _start(dep, "serve", [sys.executable, "-m", "kernelopt.cli.main", "serve", "--port", str(port)], dep.server_cwd, env,
               _api_ready(dep.url))
        if mode == "celery":
            worker_log = root / "worker.log"
            _start(dep, "worker", [sys.executable, "-m", "kernelopt.cli.main", "worker"], dep.server_cwd, env,
                   lambda: worker_log.exists() and b" ready." in worker_log.read_bytes())

        # Team B's harmless job: a job, an uploaded file and artifacts, stored before any attack.
        b_name = f"teamb_{CANARY}.py"
        job_id = submit(dep, dep.team_b, b_name, payloads.benign(f"TEAM-B-SECRET-{CANARY}"))
        dep.b_job = wait_job(dep, dep.team_b, job_id)
        assert dep.b_job["status"] == "succeeded", (dep.b_job, dep.log_tail())
        listing = httpx.get(f"{dep.url}/v1/jobs/{job_id}/artifacts", headers=dep.headers(dep.team_b)).json()["items"]
        dep.b_blobs = {a["name"]: a["sha256"] for a in listing}
        assert {"report.md", "optimized_module.py", "events.jsonl"} <= set(dep.b_blobs), dep.b_blobs
        from sqlalchemy import text

        with dep.engine().connect() as c:
            dep.b_blobs["input"] = c.execute(text("select input_blob from jobs where id = :i"), {"i": job_id}).scalar()
        dep.b_bytes = {sha: dep.blob_path(sha).read_bytes() for sha in dep.b_blobs.values()}
        assert f"TEAM-B-SECRET-{CANARY}".encode() in dep.b_bytes[dep.b_blobs["input"]]
        yield dep


def _teardown(dep: Deployment) -> None:
    for proc in reversed(dep.procs):
        _stop(proc)
    kill_marked(dep.marker)
    for path in _plant_paths(dep) + _engine_plants(dep) + [str(_tmp_fill(dep))]:  # where the defences did not hold
        with contextlib.suppress(OSError):
            Path(path).unlink()
        shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(Exception):
        import redis

        client = redis.Redis.from_url(dep.redis_url)
        for k in client.scan_iter(f"adv:{dep.marker}:*"):
            client.delete(k)
        client.close()
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(dep.canary_pg_dsn, autocommit=True) as conn:
            conn.execute("delete from teams where name = %s", (dep.marker + "-team",))


def _plant_paths(dep: Deployment) -> list[str]:
    m = dep.marker
    return [str(p) for p in (dep.data_dir / f"adv-{m}.txt", dep.data_dir / "jobs" / f"adv-{m}.txt",
                             dep.blobs_dir / f"adv-{m}.txt", dep.server_cwd / f"adv-{m}.txt", dep.server_cwd / ".env",
                             dep.worker_cwd / f"adv-{m}.txt", Path("/tmp") / f"adv-{m}.txt",
                             REPO / "isolation" / f"adv_{m}.py")]


def _engine_plant(dep: Deployment) -> Path:
    """Where the traps payload asks the engine (not itself) to write, through a link."""
    return Path("/tmp") / f"adv-{dep.marker}-via-engine.py"


def _link_plant(dep: Deployment, name: str) -> Path:
    """Where a link at `name` in the work directory (experience.jsonl, transcripts.jsonl) leads: a place the
    job's orchestrator (the job's uid) could write, were it to follow the link."""
    return Path("/tmp") / f"adv-{dep.marker}-via-{name}"


def _reply_plant(dep: Deployment) -> Path:
    """The work directory a forged reply asks the orchestrator to make (JobContext.__post_init__)."""
    return Path("/tmp") / f"adv-{dep.marker}-via-reply"


def _tmp_fill(dep: Deployment) -> Path:
    """The file break 3 fills /tmp with: in the sandbox's own tmpfs (on the host's /tmp only with the sandbox off)."""
    return Path("/tmp") / f"adv-{dep.marker}-fill"


def _engine_plants(dep: Deployment) -> list[str]:
    """Every place outside the job where a payload asks the trusted side (not itself) to write."""
    return [str(p) for p in (_engine_plant(dep), _link_plant(dep, "experience.jsonl"),
                             _link_plant(dep, "transcripts.jsonl"), _reply_plant(dep))]


# --------------------------------------------------------------------------- the attacks, run once per deployment

def _rows(dep: Deployment) -> dict[str, list]:
    """Every team and key, and team B's jobs, events and artifacts, as plain values."""
    from sqlalchemy import text

    b = dep.team_b.id
    queries = {
        "teams": "select * from teams order by id",
        "api_keys": "select * from api_keys order by id",
        "team_b_jobs": f"select * from jobs where team_id = {b} order by id",
        "team_b_events": f"select e.* from job_events e join jobs j on j.id = e.job_id where j.team_id = {b} "
                         "order by e.id",
        "team_b_artifacts": f"select a.* from artifacts a join jobs j on j.id = a.job_id where j.team_id = {b} "
                            "order by a.id",
    }
    with dep.engine().connect() as c:
        return {k: [tuple(str(v) for v in row) for row in c.execute(text(q))] for k, q in queries.items()}


def _data_dir_unexpected(dep: Deployment) -> list[str]:
    """Files of the data dir that are neither the database nor a blob some row refers to."""
    from sqlalchemy import text

    with dep.engine().connect() as c:
        referenced = {r[0] for r in c.execute(text("select input_blob from jobs union select weights_blob from jobs "
                                                    "union select blob_sha256 from artifacts")) if r[0]}
    out = []
    for p in sorted(dep.data_dir.rglob("*")):
        rel = p.relative_to(dep.data_dir)
        if p.is_dir() and not p.is_symlink():
            if rel.parts[0] == "jobs" and len(rel.parts) > 1:
                out.append(f"{rel}/ (a job directory left behind)")
            continue
        if rel.parts[0] == "blobs" and len(rel.parts) == 4 and rel.name in referenced \
                and rel.parts[1:3] == (rel.name[:2], rel.name[2:4]):
            continue
        if dep.mode == "embedded" and str(rel) in ("kernelopt.db", "kernelopt.db-wal", "kernelopt.db-shm"):
            continue
        out.append(str(rel))
    return out


def _files_with(root: Path, marker: str, depth: int = 2) -> list[str]:
    found = []
    for dirpath, dirs, files in os.walk(root):
        if len(Path(dirpath).relative_to(root).parts) >= depth:
            dirs[:] = []
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", "node_modules")]
        found += [os.path.join(dirpath, f) for f in files + dirs if marker in f]
    return found


@dataclass
class Attack:
    name: str
    job_id: str
    markers: tuple[str, ...]
    job: dict = None
    survivors: list[str] = field(default_factory=list)
    seen: Seen = None
    events: list[dict] = field(default_factory=list)
    result: dict = None  # the job's stored result (the worker's record)
    artifacts: dict = field(default_factory=dict)  # name -> (status, bytes), downloaded by team A

    def loot(self) -> str:
        """Everything team A can read about its job: artifacts, events, status fields (latin-1 text)."""
        parts = [b.decode("latin-1") if isinstance(b, bytes) else str(b) for _, b in self.artifacts.values()]
        parts += [json.dumps(e) for e in self.events] + [json.dumps(self.job)]
        return "\n".join(parts)

    def payload_log(self) -> str:
        status, body = self.artifacts.get("profile.json", (None, b""))
        try:
            return json.dumps(json.loads(body)["log"], indent=1)[:6000]
        except (ValueError, TypeError, KeyError):
            return f"(no log: {status})"


@dataclass
class Observed:
    dep: Deployment
    attacks: dict[str, Attack]
    rows_before: dict
    rows_after: dict
    unmatched_before: float
    unmatched_after: float
    redis_keys: dict[str, bytes]
    planted: list[str]
    data_dir_unexpected: list[str]
    canary_pg_team: int
    b_downloads: dict
    server_alive: bool
    b_polls: list[tuple[float, float, int | str]]  # team B's polls of its job meanwhile: (when, seconds, status)
    service_rss_kib: dict[str, int]  # "pid command" -> resident peak (VmHWM) of the server's / worker's processes
    sqlite_growth: int | None  # bytes the SQLite files (database and WAL) grew by over the attacks (embedded)
    shmem_base_kib: int  # the machine's Shmem before the attacks


def _cfg(dep: Deployment, marker: str, **extra) -> dict:
    b = {name: str(dep.blob_path(sha)) for name, sha in dep.b_blobs.items()}
    return {
        "marker": marker, "team_b": dep.team_b.id, "team_b_blobs": b, "team_b_job": dep.b_job["id"],
        "sqlite": str(dep.data_dir / "kernelopt.db") if dep.mode == "embedded" else None,
        "blobs_dir": str(dep.blobs_dir), "plant": _plant_paths(dep),
        "api_port": dep.api_port, "redis_port": 6379, "redis_db": dep.redis_db, "pg_dsn": dep.canary_pg_dsn,
        "fork_count": FORK_COUNT, "memory_gib": MEMORY_GIB, "engine_plant": str(_engine_plant(dep)),
        "reply_plant": str(_reply_plant(dep)), "tmp_fill_gib": TMP_FILL_GIB, "tmp_fill": str(_tmp_fill(dep)),
        "reply_mib": REPLY_MIB, "event_lines": EVENT_LINES, **extra,
    }


class TeamBPolls(threading.Thread):
    """Team B asks the API for its job every 0.2 s while the attacks run: does the service answer other teams?"""

    def __init__(self, dep: Deployment):
        super().__init__(name="adv-team-b-polls", daemon=True)
        self.dep = dep
        self.samples: list[tuple[float, float, int | str]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        url = f"{self.dep.url}/v1/jobs/{self.dep.b_job['id']}"
        with httpx.Client(headers=self.dep.headers(self.dep.team_b), timeout=60) as client:
            while not self._halt.wait(0.2):
                t0 = time.monotonic()
                try:
                    status: int | str = client.get(url).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                self.samples.append((t0, time.monotonic() - t0, status))

    def stop(self) -> None:
        self._halt.set()
        self.join(70)


def _sqlite_bytes(dep: Deployment) -> int:
    return sum(p.stat().st_size for p in dep.data_dir.glob("kernelopt.db*") if p.is_file())


def _service_rss_kib(dep: Deployment) -> dict[str, int]:
    """The resident peak (VmHWM: the most the process ever held) of the server's or worker's processes."""
    from kernelopt.isolation.child import descendants

    out = {}
    for proc in dep.procs:
        for pid in [proc.pid] + descendants(proc.pid):
            cmd = next((c for p, c, _ in _processes() if p == pid), "?")
            out[f"{pid} {cmd[:120]}"] = _kib(_status(pid), "VmHWM")
    return out


@pytest.fixture(scope="module")
def observed(deployment) -> Observed:
    import redis
    from sqlalchemy import text

    dep = deployment
    m = dep.marker
    rows_before = _rows(dep)
    unmatched_before = unmatched_requests(dep)
    sqlite_before = _sqlite_bytes(dep) if dep.mode == "embedded" else None
    watch = ProcWatch()
    watch.start()
    polls = TeamBPolls(dep)
    polls.start()
    attacks = {}

    def links(*names: str) -> dict:
        return {"link_plants": {n: str(_link_plant(dep, n)) for n in names}}

    # one launch_config candidate an iteration, one seed: the links need an attempt recorded (and an LLM call
    # after the search's child started), not a search
    search = {"time_budget_s": 240, "generators": ["launch_config"], "plans_per_iteration": 1, "seeds": [1]}
    with_llm = {**search, "generators": ["launch_config", "llm"], "plans_per_iteration": 2}
    try:
        for name, make, markers, options, extra in (
                ("intrusion", payloads.intrusion, (f"{m}-daemon",), None, {}),
                ("fork_bomb", payloads.fork_bomb, (f"{m}-bomb",), None, {}),
                ("memory", payloads.memory_hog, (f"{m}-mem",), None, {}),
                ("traps", payloads.work_dir_traps, (), None, {}),
                ("forger", payloads.verdict_forger, (), None, {}),
                ("experience_link", payloads.work_file_links, (), search, links("experience.jsonl")),
                ("transcripts_link", payloads.work_file_links, (), with_llm, links("transcripts.jsonl")),
                ("constructing_reply", payloads.constructing_reply, (), None, {}),
                ("memory_reply", payloads.memory_reply, (), None, {})):
            job_id = submit(dep, dep.team_a, f"{name}.py", make(_cfg(dep, m, **extra)), options)
            attacks[name] = Attack(name, job_id, markers)
            watch.track(job_id, *markers)
        for a in attacks.values():  # one slot, one worker: they run one after the other, in this order
            a.job = wait_job(dep, dep.team_a, a.job_id)
            a.survivors = survivors(a.job_id, a.markers)
    finally:
        watch.stop()
        polls.stop()
    for a in attacks.values():
        a.seen = watch.seen[a.job_id]
        a.artifacts = artifacts(dep, dep.team_a, a.job_id)
        with dep.engine().connect() as c:
            a.events = [{"kind": k, "message": msg, "data": d} for k, msg, d in c.execute(
                text("select kind, message, data from job_events where job_id = :i order by id"), {"i": a.job_id})]
            raw = c.execute(text("select result from jobs where id = :i"), {"i": a.job_id}).scalar()
            a.result = json.loads(raw) if isinstance(raw, str) else raw
    client = redis.Redis.from_url(dep.redis_url)
    keys = {k.decode(): client.get(k) or b"" for k in client.scan_iter(f"adv:{m}:*")}
    client.close()
    import psycopg

    with psycopg.connect(dep.canary_pg_dsn) as conn:
        canary_team = conn.execute("select count(*) from teams where name = %s", (m + "-team",)).fetchone()[0]
    planted = [p for p in _plant_paths(dep) + _engine_plants(dep) if os.path.lexists(p)]
    planted += [p for root in {dep.server_cwd, dep.worker_cwd, dep.root} for p in _files_with(root, m)]
    return Observed(dep=dep, attacks=attacks, rows_before=rows_before, rows_after=_rows(dep),
                    unmatched_before=unmatched_before, unmatched_after=unmatched_requests(dep), redis_keys=keys,
                    planted=sorted(set(planted)), data_dir_unexpected=_data_dir_unexpected(dep),
                    canary_pg_team=canary_team, b_downloads=artifacts(dep, dep.team_b, dep.b_job["id"]),
                    server_alive=httpx.get(f"{dep.url}/healthz", timeout=10).status_code == 200,
                    b_polls=polls.samples, service_rss_kib=_service_rss_kib(dep),
                    sqlite_growth=None if sqlite_before is None else _sqlite_bytes(dep) - sqlite_before,
                    shmem_base_kib=watch.shmem_base_kib)


# --------------------------------------------------------------------------- the cases

def assert_clear_end(a: Attack) -> None:
    """The job ended in a state the user understands: a final status, an outcome, a cause (a failed job's is
    "failed: " and its error's first line; the whole message is in `error`); no traceback, no 'internal error',
    one attempt (no re-queue by the reaper)."""
    job = a.job
    detail = f"{a.name}: {json.dumps(job, indent=1)}\npayload log: {a.payload_log()}"
    assert job["status"] in ("succeeded", "failed"), detail
    assert job["outcome"] and job["cause"], detail
    if job["status"] == "failed":
        assert job["error"] and job["cause"].startswith("failed: "), detail
    for text_ in (job["cause"] or "", job["error"] or ""):
        assert "Traceback" not in text_ and "internal" not in text_.lower(), detail
    assert job["attempts"] == 1, detail


def _secrets_found(haystack: str, secrets: dict[str, str]) -> list[str]:
    return [name for name, value in secrets.items() if value and value in haystack]


def test_credentials_in_the_environment_cannot_be_stolen_or_used(observed):
    """The payload reads its environment and its ancestors' (/proc/<pid>/environ: the engine's, the worker's
    or server's) and uses any database they name: the service's secrets never reach team A, no key is
    added for team B, team B's rows are untouched."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    secrets = {**SECRETS_IN_ENV, "database password": DB_PASSWORD}
    found = _secrets_found(a.loot() + "".join(v.decode("latin-1") for v in observed.redis_keys.values()), secrets)
    assert not found, f"secrets reached team A: {found}\npayload log: {a.payload_log()}"
    assert observed.rows_after["api_keys"] == observed.rows_before["api_keys"], (
        f"API keys changed\npayload log: {a.payload_log()}")
    assert observed.rows_after["team_b_jobs"] == observed.rows_before["team_b_jobs"], (
        f"team B's job rows changed\npayload log: {a.payload_log()}")


def test_the_database_file_and_the_blob_store_cannot_be_read(observed):
    """Nothing of team B (its upload, its report, its team name, its key's hash) nor the SQLite file reaches
    team A: not in its artifacts, events or job, not over Redis."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    dep = observed.dep
    b_key_hash = hashlib.sha256(dep.team_b.key.encode()).hexdigest()
    secrets = {"team B's upload": f"TEAM-B-SECRET-{CANARY}", "team B's file name": f"teamb_{CANARY}",
               "team B's name": dep.team_b.name, "team B's key hash": b_key_hash,
               "the SQLite file": "SQLite format 3"}
    found = _secrets_found(a.loot() + "".join(v.decode("latin-1") for v in observed.redis_keys.values()), secrets)
    assert not found, f"read by team A: {found}\npayload log: {a.payload_log()}"


def test_nothing_is_written_outside_the_work_directory(observed):
    """No file appears in the data dir, the blob store, the server's or worker's directory, /tmp or
    KernelOPT's packages; the data dir holds the database and referenced blobs only."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    planted = [p for p in observed.planted if p not in _engine_plants(observed.dep)]
    assert not planted, f"written outside the job: {planted}\npayload log: {a.payload_log()}"
    assert not observed.data_dir_unexpected, observed.data_dir_unexpected


def test_team_b_blobs_cannot_be_tampered_with(observed):
    """Team B's blobs keep their bytes, and team B downloads exactly what it had."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    dep = observed.dep
    changed = [name for name, sha in dep.b_blobs.items()
               if not dep.blob_path(sha).is_file() or dep.blob_path(sha).read_bytes() != dep.b_bytes[sha]]
    assert not changed, f"team B's blobs changed: {changed}\npayload log: {a.payload_log()}"
    for name, (status, body) in observed.b_downloads.items():
        assert status == 200 and body == dep.b_bytes[dep.b_blobs[name]], (name, status)
    for table in ("team_b_artifacts", "team_b_events", "teams"):
        assert observed.rows_after[table] == observed.rows_before[table], table


def test_loopback_services_cannot_be_reached(observed):
    """The API, PostgreSQL and Redis on 127.0.0.1: no request reaches the API (its own metrics), no row is
    inserted in PostgreSQL, no key is set in Redis."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    problems = []
    if observed.redis_keys:
        problems.append(f"Redis keys set: {sorted(observed.redis_keys)}")
    if observed.unmatched_after != observed.unmatched_before:
        problems.append(f"the API answered {observed.unmatched_after - observed.unmatched_before:.0f} requests")
    if observed.canary_pg_team:
        problems.append("a row was inserted in PostgreSQL")
    assert not problems, f"{problems}\npayload log: {a.payload_log()}"


def test_a_setsid_daemon_does_not_outlive_its_job(observed):
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    assert not a.survivors, f"processes of the job outlived it: {a.survivors}"


def test_a_6gib_sparse_artifact_is_neither_written_nor_copied(observed):
    """The file-size limit stops the 6 GiB file in the sandbox (the worker sees at most the limit); nothing
    large is stored, no temp file is left, the job is not re-queued."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    result = a.result or {}
    sizes = {s["name"]: s.get("size") for s in result.get("skipped_artifacts", [])}
    stored = {name: len(body) for name, (status, body) in a.artifacts.items() if isinstance(body, bytes)}
    seen = sizes.get("capture_tensors.pt") or stored.get("capture_tensors.pt") or 0
    assert seen <= LIMITS.file_size_bytes, f"the worker found a {seen / GiB:.1f} GiB capture_tensors.pt"
    big = [p for p in observed.dep.blobs_dir.rglob("*") if p.is_file() and p.stat().st_size > 128 << 20]
    assert not big and not list(observed.dep.blobs_dir.rglob(".incoming-*")), big


def test_the_worker_does_not_follow_links_out_of_the_work_directory(observed):
    """events.jsonl swapped for a link to team B's events blob: the worker, which tails that file into the
    job's events, must not read through the link."""
    a = observed.attacks["intrusion"]
    assert_clear_end(a)
    leaked = [e["message"] for e in a.events if f"teamb_{CANARY}" in json.dumps(e)]
    assert not leaked, f"team B's events recorded as team A's: {leaked[:3]}"


def test_a_fork_bomb_is_held_to_the_job_process_limit(observed):
    """10,000 processes asked for; the job's uid gets the per-job limit, plus the few processes that
    start the sandbox (the orchestrator, bubblewrap), which are counted here but are outside it."""
    a = observed.attacks["fork_bomb"]
    assert_clear_end(a)
    assert a.seen.most_at_once <= LIMITS.processes + 8, (
        f"{a.seen.most_at_once} processes of the job at once (limit {LIMITS.processes})\n{a.payload_log()}")
    assert not a.survivors, f"processes of the job outlived it: {a.survivors[:5]} ({len(a.survivors)})"
    assert observed.server_alive


def test_memory_past_the_limit_is_refused(observed):
    a = observed.attacks["memory"]
    assert_clear_end(a)
    assert a.seen.vm_peak_kib * 1024 <= LIMITS.address_space_bytes, (
        f"a process of the job reached {a.seen.vm_peak_kib / (1 << 20):.1f} GiB of address space "
        f"({a.seen.vm_peak_cmd!r}); limit {LIMITS.address_space_bytes / GiB:.0f} GiB\n{a.payload_log()}")
    assert not a.survivors, a.survivors
    assert observed.server_alive


def test_no_other_team_row_changes(observed):
    """All of it together: every team, every key, and team B's jobs, events and artifacts are as before."""
    changed = [t for t in observed.rows_before if observed.rows_after[t] != observed.rows_before[t]]
    assert not changed, {t: (observed.rows_before[t], observed.rows_after[t]) for t in changed}


def test_links_and_fifos_left_in_the_work_directory_trap_neither_the_engine_nor_the_worker(observed):
    """The trusted side works in the job's directory after the sandboxed children: the orchestrator writes
    its report and modules there, the worker reads the events and the report. A FIFO, a link (to a file
    outside, to team B's blob) or a directory left at those names must not block them, be written or
    read through, or end the job with an internal error."""
    a = observed.attacks["traps"]
    assert_clear_end(a)
    assert str(_engine_plant(observed.dep)) not in observed.planted, "the engine wrote through a link"
    arts = a.artifacts
    assert json.loads(arts["report.json"][1])["result"]["outcome"] == a.job["outcome"], arts.get("report.json")
    assert arts["report.md"][1].startswith(b"# KernelOPT report"), arts.get("report.md")
    assert arts["optimized_module.py"][1] == arts["problem.py"][1] == arts["baseline_module.py"][1]


def test_a_submission_forging_its_verdicts_does_not_end_optimized(observed):
    """Break 4 of issue 36: a kernel file that patches `pickle.dumps` in every process importing it answered
    "Gate 3 passed (forged)" and a 1000x timing from the process that verified it. Gate 3's verdict is now the
    judge's, a process that never imports the submission: the forged answer is refused for what it is."""
    a = observed.attacks["forger"]
    assert_clear_end(a)
    detail = json.dumps(a.job, indent=1)
    assert a.job["outcome"] != "optimized" and a.job["speedup"] in (None, 1.0), detail
    assert "not a manifest of its outputs" in a.job["cause"], detail
    everything = json.dumps([a.job, a.result, a.events])
    assert "(forged)" not in everything and "1000.000x" not in everything


def _assert_link_not_followed(observed: Observed, attack: str, name: str) -> None:
    a = observed.attacks[attack]
    target = str(_link_plant(observed.dep, name))
    assert target not in observed.planted, f"the orchestrator wrote through {name}: {target} exists"
    assert_clear_end(a)
    detail = f"{json.dumps(a.job, indent=1)}\npayload log: {a.payload_log()}"
    assert a.job["status"] == "failed" and a.job["outcome"] == "failed", detail
    assert f"{name} in the job's work directory is a symbolic link" in a.job["error"], detail


def test_a_link_at_experience_jsonl_is_not_written_through(observed):
    """Break 1 of issue 36 (experience.jsonl): the search's child, which imports the submission again and is alive
    while the orchestrator records its attempts, replaced experience.jsonl (the summarizer appends one item per
    attempt, a built-in generator's included: no LLM needed) by a link to a file outside the job; the orchestrator
    appended through it. Now nothing is written there, and the job fails saying which file was a link."""
    _assert_link_not_followed(observed, "experience_link", "experience.jsonl")


def test_a_link_at_transcripts_jsonl_is_not_written_through(observed):
    """Break 1 of issue 36 (transcripts.jsonl): the same with the LLM client's transcript, appended once per call.
    The job asks for the `llm` generator (the service's LLM is configured at a port where nothing answers: each call
    fails, and is recorded); the link is planted by the search's child after the first call, before the next."""
    _assert_link_not_followed(observed, "transcripts_link", "transcripts.jsonl")


def test_a_reply_that_constructs_one_of_our_classes_is_refused(observed):
    """Break 2 of issue 36: the load child's reply was a pickle *calling* JobContext(workdir=<outside the job>);
    decoded with pickle.loads, its __post_init__ ran in the orchestrator and made that directory and its files.
    Now replies decode through isolation/safe_pickle: nothing is made, and the job ends saying the reply was
    refused."""
    a = observed.attacks["constructing_reply"]
    assert str(_reply_plant(observed.dep)) not in observed.planted, "the orchestrator ran JobContext.__post_init__"
    assert_clear_end(a)
    detail = f"{json.dumps(a.job, indent=1)}\npayload log: {a.payload_log()}"
    assert "load_problem answered with something that is not a result: a child's reply may not construct " \
           "kernelopt.pipeline.context.JobContext" in a.job["cause"], detail


def test_host_memory_stays_within_the_job_budget(observed):
    """Break 3 of issue 36: the load child writes 8 GiB to /tmp and answers with a 1 GiB reply. The tmpfs stops
    the write at its size (KERNELOPT_SANDBOX_TMP_MIB); the reply is refused by its length before it is read
    (KERNELOPT_SANDBOX_MAX_REPLY_MIB), so neither the job's orchestrator nor the server or worker ever holds it;
    the job ends saying why, and team B's requests are answered promptly all along."""
    a = observed.attacks["memory_reply"]
    # nothing outside the sandbox held the reply: the job's orchestrator, the server, the worker
    assert a.seen.trusted_rss_kib <= TRUSTED_RSS_BUDGET, (
        f"{a.seen.trusted_rss_cmd!r} held {a.seen.trusted_rss_kib >> 10} MiB")
    over = {cmd: kib >> 10 for cmd, kib in observed.service_rss_kib.items() if kib > TRUSTED_RSS_BUDGET}
    assert not over, f"service processes over {TRUSTED_RSS_BUDGET >> 10} MiB resident (MiB): {over}"
    # /tmp filled up to its size and no further: the payload's count, and the machine's shared memory (tmpfs pages)
    loot = json.loads(a.artifacts["profile.json"][1])["loot"]
    assert loot["tmp_refused"] == "ENOSPC" and POLICY.tmp_bytes - (64 << 20) <= loot["tmp_written"] <= \
        POLICY.tmp_bytes, loot
    shmem = (a.seen.shmem_peak_kib - observed.shmem_base_kib) << 10
    assert POLICY.tmp_bytes - (128 << 20) <= shmem <= POLICY.tmp_bytes + (512 << 20), (
        f"the machine's Shmem grew by {shmem / GiB:.2f} GiB (the tmpfs: {POLICY.tmp_bytes / GiB:.2f} GiB)")
    # team B was answered meanwhile
    during = [s for s in observed.b_polls if a.seen.first_at <= s[0] <= a.seen.last_at]
    assert len(during) >= 3, (len(during), a.seen)
    assert all(status == 200 for _, _, status in during), during
    slowest = max(seconds for _, seconds, _ in during)
    assert slowest < 5.0, f"team B waited {slowest:.1f} s for an answer during the attack"
    # and the job ended saying why
    assert_clear_end(a)
    detail = f"{json.dumps(a.job, indent=1)}\npayload log: {a.payload_log()}"
    assert f"load_problem answered more than {POLICY.max_reply_bytes >> 20} MiB" in a.job["cause"], detail


def test_one_job_cannot_fill_the_shared_database_with_events(observed):
    """Break 5 of issue 36: 150 event lines of 1 MiB in events.jsonl, which the worker tails into the shared
    database, once stored 150 MB of one job's events. Now at most MAX_EVENT_BYTES_PER_JOB of a job's event text is
    recorded (and each message cut), the rest is dropped saying so, and the job ends as any other. (Written by the
    forger's file: 160 lines of 32 KiB first, past the cap within one of the worker's reads, then the 150.)"""
    from kernelopt.worker.execute import MAX_EVENT_BYTES_PER_JOB, MAX_EVENT_DATA, MAX_EVENT_MESSAGE

    a = observed.attacks["forger"]
    stored = sum(len(e["message"].encode()) + len(e["data"] if isinstance(e["data"], str) else json.dumps(e["data"]))
                 for e in a.events)
    # the cap is checked before each event: the one that crosses it is kept, and so are the notice and the
    # service's own status events (queued, running, its end)
    one_event = 4 * MAX_EVENT_MESSAGE + 200 + MAX_EVENT_DATA
    assert stored <= MAX_EVENT_BYTES_PER_JOB + one_event + 4096, f"{stored / (1 << 20):.2f} MiB of events stored"
    assert any(f"more than {MAX_EVENT_BYTES_PER_JOB >> 20} MiB of events" in e["message"] for e in a.events), (
        f"the cap was not reached: {stored} bytes in {len(a.events)} events")
    if observed.sqlite_growth is not None:
        assert observed.sqlite_growth <= MAX_EVENT_BYTES_PER_JOB + (8 << 20), (
            f"the SQLite files grew by {observed.sqlite_growth / (1 << 20):.1f} MiB")
    assert_clear_end(a)


def test_a_child_cannot_forge_a_line_of_the_service_log(observed):
    """Break 6 of issue 36: what a child printed reached the server's (embedded) or worker's (Celery) log verbatim,
    so submitted code could write a line recording another team's job as succeeded, or hide a prefix behind
    terminal escapes. Now every line of a child's output is escaped and prefixed with its job's id: the forged
    lines appear only as team A's job's output. (Printed by the forger's file, in every process importing it.)"""
    a = observed.attacks["forger"]
    b_job = observed.dep.b_job["id"]
    forged = f"job {b_job}: succeeded (optimized: speedup 777.000x".encode()
    prefix = f"[job {a.job_id} pid ".encode()
    lines = [line for p in observed.dep.logs for line in p.read_bytes().split(b"\n")]
    carrying = [line for line in lines if forged in line]
    assert carrying, f"the payload's lines never reached the service's log\npayload log: {a.payload_log()}"
    bad = [line for line in carrying
           if not (prefix in line and line.index(prefix) < line.index(forged)) or b"\x1b" in line or b"\r" in line]
    assert not bad, f"lines of the service's log that read as its own: {bad[:4]}"
    assert_clear_end(a)

