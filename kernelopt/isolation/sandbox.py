"""The sandbox every child that runs submitted or generated code starts in.

A sandboxed child gets, layer by layer (docs/operations.md, "Threat model"):

- `uid`: an unprivileged uid/gid of its own, leased per job from a configured
  range, never the service's (only where the service runs as root; `setpriv`);
- `env`: an environment built from an allow-list (no database, broker, API or
  LLM credentials; HOME and the Triton/Inductor caches inside its scratch);
- `network`: a network namespace of its own, loopback only;
- `pid`: a PID namespace of its own: when the child ends, every process it
  ever started (daemons that `setsid` included) ends with it;
- `filesystem`: a fresh root where only its scratch directory is writable and
  only the system, the Python environment, KernelOPT's own packages, the GPU
  device nodes and the few parts of `/sys` CUDA and PyTorch read (CPUs, NUMA
  nodes, PCI devices, the NVIDIA driver's module) are visible (read-only) — no
  database file, blob store, other job, `.env`, configuration, cgroups or the
  host's network interfaces;
- `rlimits`: address space, CPU seconds, file size, open files, processes;
- `syscalls`: a seccomp filter (isolation.syscall_filter): no user namespaces
  (root inside one is where most container escapes start), keyrings, bpf,
  userfaultfd or io_uring.

The namespaces and the fresh root come from bubblewrap (`bwrap`); where it is
missing, plain `unshare` still gives `network` and `pid` (not `filesystem`).
`probe_layers()` says, by trying, which layers this machine can give; the
service refuses to start in multi-team mode with one missing unless the
operator opts out (service.settings), and /readyz names what is off.
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterator, Mapping, Sequence

# The `kernelopt` package directory and the directory holding it (what a child puts on
# PYTHONPATH to import kernelopt). Only the package itself is bound into the sandbox, never
# its parent: from a checkout that is the repository, which may hold `.env`, the data
# directory, run directories, tests/ and benchmarks/.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
PROJECT_ROOT = PACKAGE_DIR.parent


class Layer(str, Enum):
    UID = "uid"
    ENV = "env"
    NETWORK = "network"
    PID = "pid"
    FILESYSTEM = "filesystem"
    RLIMITS = "rlimits"
    SYSCALLS = "syscalls"


ALL_LAYERS = tuple(Layer)


@dataclass(frozen=True)
class Rlimits:
    """Per-process limits applied in the child before it runs anything submitted.

    `address_space_bytes` applies to CPU-only children: CUDA reserves virtual
    address space in proportion to the device and host memory (hundreds of GiB
    on an H200), so a GPU child gets `gpu_address_space_bytes` (None: unlimited).
    `processes` counts every process of the child's uid, which is leased per job.
    """

    address_space_bytes: int | None = 16 << 30
    gpu_address_space_bytes: int | None = None
    cpu_seconds: int | None = 3600
    file_size_bytes: int | None = 4 << 30
    open_files: int | None = 4096
    processes: int | None = 1024
    # a job's orchestrator (a trusted child: no namespaces, never CUDA) is bounded too: what it reads from its
    # children (replies, files) cannot grow it past this (it imports torch: ~1 GiB of address space on a CPU build)
    orchestrator_address_space_bytes: int | None = 16 << 30


@dataclass(frozen=True)
class SandboxPolicy:
    """How children are confined; built from the service's settings or defaults."""

    enabled: bool = True
    uid_base: int = 61000  # leased per job from [uid_base, uid_base + uid_count)
    uid_count: int = 1000
    rlimits: Rlimits = field(default_factory=Rlimits)
    lease_dir: str = "/run/kernelopt-sandbox"  # root-only lock files of leased uids
    bwrap: str | None = None  # bubblewrap's path; None: the first `bwrap` on PATH
    # the size of a child's /tmp (a tmpfs: host memory, outside RLIMIT_AS; it was 12 GiB, the host's default)
    tmp_bytes: int = 2 << 30
    # the largest reply a child may send (isolation/child.py): results are plain data, tensors travel as files
    max_reply_bytes: int = 64 << 20

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "SandboxPolicy":
        """The policy named by KERNELOPT_SANDBOX* variables (the engine has no settings object)."""
        env = os.environ if environ is None else environ
        enabled = env.get("KERNELOPT_SANDBOX", "on").strip().lower() not in ("off", "0", "false", "no")
        base = cls()
        return cls(enabled=enabled,
                   uid_base=int(env.get("KERNELOPT_SANDBOX_UID_BASE", base.uid_base)),
                   uid_count=int(env.get("KERNELOPT_SANDBOX_UID_COUNT", base.uid_count)),
                   lease_dir=env.get("KERNELOPT_SANDBOX_LEASE_DIR", base.lease_dir),
                   bwrap=env.get("KERNELOPT_SANDBOX_BWRAP") or None,
                   tmp_bytes=int(env.get("KERNELOPT_SANDBOX_TMP_MIB", base.tmp_bytes >> 20)) << 20,
                   max_reply_bytes=int(env.get("KERNELOPT_SANDBOX_MAX_REPLY_MIB", base.max_reply_bytes >> 20)) << 20,
                   rlimits=Rlimits(orchestrator_address_space_bytes=_mib(
                       env.get("KERNELOPT_SANDBOX_ORCHESTRATOR_MIB"), Rlimits().orchestrator_address_space_bytes)))

    def job_uid_of_this_process(self) -> int | None:
        """This process's uid if it is one of the jobs' (a job's orchestrator), else None."""
        uid = os.getuid()
        return uid if self.uid_base <= uid < self.uid_base + self.uid_count else None


# --------------------------------------------------------------------------- environment

# Variables a child may inherit from the caller, by exact name or prefix. Nothing
# else passes: in particular no KERNELOPT_* (database, broker, API keys), no
# OPENAI_*/LLM keys, no cloud credentials.
_PASS_NAMES = frozenset({
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "TRITON_INTERPRET", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "TZ", "LANG", "LC_ALL", "KERNELOPT_KERNEL_CACHE", "KERNELOPT_BENCH_RUN",
    "KERNELOPT_LOG_LABEL",  # whose children these are, in the log (isolation/child_output.py)
    "HELION_AUTOTUNE_EFFORT",  # "none" in a Helion kernel file's job (pipeline/job.children_env)
})
_PASS_PREFIXES = ("KERNELOPT_SANDBOX", "TORCHINDUCTOR_", "TORCH_COMPILE_", "TORCH_LOGS", "TRITON_DEBUG", "TRITON_ALWAYS_COMPILE")
_SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _mib(value: str | None, default: int | None) -> int | None:
    """A size in MiB from the environment ("0" or "none": unlimited), else `default`."""
    if value is None or not value.strip():
        return default
    if value.strip().lower() in ("0", "none", "unlimited"):
        return None
    return int(value) << 20


def allowed(name: str) -> bool:
    return name in _PASS_NAMES or name.startswith(_PASS_PREFIXES)


# What the sandbox adds to a scratch directory (HOME, the compiler caches): not artifacts.
SANDBOX_DIRS = (".home", ".cache")
# Where a child with a fresh root (bubblewrap) sees its scratch's compiler caches, `<scratch>/.cache`: one path for
# every job. Triton's cache lists a kernel's files by absolute path (its `__grp__` group files), so caches that
# isolation.compile_cache lends from one job to the next are found only at the path they were written at.
CACHE_MOUNT = Path("/var/cache/kernelopt")


def child_environment(scratch: Path, extra: Mapping[str, str] | None = None,
                      inherited: Mapping[str, str] | None = None, cache_at: Path | None = None) -> dict[str, str]:
    """The whole environment of a child: the allow-list of `inherited` and `extra`, and fixed paths. The compiler
    caches are at `cache_at` where given (CACHE_MOUNT in a fresh root), else `<scratch>/.cache`."""
    source = dict(os.environ if inherited is None else inherited)
    source.update(extra or {})
    env = {k: v for k, v in source.items() if allowed(k)}
    exe_dir = str(Path(sys.executable).parent)
    cache = cache_at or scratch / ".cache"
    env.update({
        "PATH": f"{exe_dir}:{_SAFE_PATH}",
        "HOME": str(scratch / ".home"),
        # getpass.getuser() (Inductor's cache paths) reads these first; the job's uid has no passwd entry.
        "USER": "kernelopt-job",
        "LOGNAME": "kernelopt-job",
        "XDG_CACHE_HOME": str(cache),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(PROJECT_ROOT),
        # helion imports scikit-learn, whose joblib would start worker processes of its own; serial is what a
        # stage child wants
        "JOBLIB_MULTIPROCESSING": "0",
        "LANG": env.get("LANG", "C.UTF-8"),
    })
    env.setdefault("KERNELOPT_KERNEL_CACHE", str(cache / "kernels"))
    return env


# --------------------------------------------------------------------------- uid lease

class UidLease:
    """An unprivileged uid/gid held for one job: an flock on a root-only lock file.

    The lock dies with the holding process, so a crashed job never leaks its uid.
    Each job has its own uid, so one job's processes limit (RLIMIT_NPROC counts
    per uid) and files are its own.
    """

    def __init__(self, uid: int, fd: int | None):
        self.uid = self.gid = uid
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "UidLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lease_uid(policy: SandboxPolicy) -> UidLease | None:
    """A free uid of the policy's range, or None where this process cannot change uid (not root)."""
    if os.geteuid() != 0 or not policy.enabled:
        return None
    lease_dir = Path(policy.lease_dir)
    lease_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    start = os.getpid() % max(1, policy.uid_count)  # spread concurrent workers over the range
    for i in range(policy.uid_count):
        uid = policy.uid_base + (start + i) % policy.uid_count
        fd = os.open(lease_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise RuntimeError(f"no free sandbox uid in [{policy.uid_base}, {policy.uid_base + policy.uid_count})")


def blocking_ancestor(path: Path) -> Path | None:
    """The first directory above `path` that another uid cannot traverse (no o+x), if any.

    A job's orchestrator runs as the job's uid without a mount namespace of its
    own, so it reaches its work directory through the host's directories.
    """
    for parent in reversed(Path(os.path.abspath(path)).parents):
        try:
            if not os.stat(parent).st_mode & 0o001:
                return parent
        except OSError:
            return parent
    return None


def give_to(path: Path, uid: int | None) -> None:
    """Make `path` (a scratch directory tree) owned by `uid`. Only root can.

    The tree was written by sandboxed code, which may have swapped a directory
    for a symbolic link: `os.fwalk` holds each directory open and every chown is
    relative to that descriptor, without following links, so nothing outside
    the tree changes owner.
    """
    if uid is None or os.geteuid() != 0 or not os.path.isdir(path) or os.path.islink(path):
        return
    os.chown(path, uid, uid, follow_symlinks=False)
    for _, dirs, files, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in dirs + files:
            try:
                os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass


def remove_links(path: Path) -> list[str]:
    """Delete every symbolic link under `path` (a scratch directory a sandboxed child wrote).

    No stage writes links; one left by submitted code could make a later write of
    the trusted side (a report, an artifact) land outside the directory.
    """
    removed: list[str] = []
    if not os.path.isdir(path) or os.path.islink(path):
        return removed
    for root, dirs, files, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in dirs + files:
            try:
                if _is_link_at(name, dir_fd):
                    os.unlink(name, dir_fd=dir_fd)
                    removed.append(os.path.join(root, name))
            except FileNotFoundError:
                pass
    return removed


def _is_link_at(name: str, dir_fd: int) -> bool:
    import stat

    return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)


# --------------------------------------------------------------------------- the command

@dataclass(frozen=True)
class Confinement:
    """Where one child runs: its scratch directory (the only writable place) and what it may read."""

    scratch: Path
    read_only: tuple[Path, ...] = ()
    uid: int | None = None  # the job's leased uid; None: the caller's own
    gpu: bool = True  # bind the GPU device nodes (and lift the address-space limit)
    isolate: bool = True  # False: a trusted child (the orchestrator): curated env and uid only
    tmp_bytes: int = 2 << 30  # the size of its /tmp (SandboxPolicy.tmp_bytes)


def _readable_roots() -> list[Path]:
    """The system and the Python environment, read-only in every sandbox."""
    roots = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")]
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              str(Path(sys.executable).resolve().parent.parent)}:
        roots.append(Path(p))
    for p in sys.path:  # site-packages and any environment the interpreter really imports from
        if p and Path(p).is_dir() and _under_site_packages(Path(p)):
            roots.append(Path(p))
    return roots


def _project_packages() -> list[Path]:
    """KernelOPT's own code: the `kernelopt` package directory, where no site-packages bind already
    holds it (a checkout, or a `pip install --target` directory)."""
    return [] if _under_site_packages(PACKAGE_DIR) else [PACKAGE_DIR]


def _under_site_packages(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


# What a child sees of /sys (read-only): CPU and NUMA topology (PyTorch, OpenMP), the PCI devices and the
# NVIDIA driver's module (CUDA and NVML find the GPU there). Not the host's cgroups (other jobs' memory and
# CPU use), network interfaces, firmware tables or kernel settings.
_SYS_PATHS = ("/sys/devices/system/cpu", "/sys/devices/system/node", "/sys/bus/pci", "/sys/devices/pci*",
              "/sys/module/nvidia", "/sys/module/nvidia_uvm", "/sys/kernel/mm/transparent_hugepage")


def _sys_paths() -> list[Path]:
    found: list[Path] = []
    for pattern in _SYS_PATHS:
        found += sorted(Path("/").glob(pattern.lstrip("/"))) if "*" in pattern else [Path(pattern)]
    return [p for p in found if p.exists()]


_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime",
              "alternatives", "os-release", "mime.types")


def _gpu_nodes() -> list[str]:
    return sorted(str(p) for p in Path("/dev").glob("nvidia*"))


def uses_gpu(env: Mapping[str, str]) -> bool:
    """Whether a child with environment `env` may use the GPU (then it gets the device nodes)."""
    return bool(_gpu_nodes()) and env.get("CUDA_VISIBLE_DEVICES") != "" and env.get("TRITON_INTERPRET") != "1"


def bwrap_argv(c: Confinement, bwrap: str, host_sys: bool = False) -> list[str]:
    """bubblewrap's arguments for confinement `c` (everything up to the command)."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:  # unprivileged: a user namespace, and no capabilities in it
        argv += ["--unshare-user", "--cap-drop", "ALL"]
    seen: set[str] = set()  # bind-mounted paths: everything below them exists in the sandbox
    made: set[str] = set()  # directories made empty (tmpfs, mount points)

    def parents(target: str) -> None:
        # bwrap makes missing parents of a mount point 0700: the sandbox uid could not traverse them.
        for parent in reversed(Path(target).parents):
            p = str(parent)
            if p == "/" or p in made or any(p == s or p.startswith(s + "/") for s in seen):
                continue
            argv.extend(["--perms", "0755", "--dir", p])
            made.add(p)

    def ro(path: Path) -> None:
        real = os.path.realpath(path)
        if not os.path.exists(real):
            return
        for target in dict.fromkeys((str(path), real)):
            if target not in seen:
                parents(target)
                seen.add(target)
                argv.extend(["--ro-bind", real, target])

    # The fresh mounts first: a bind below /tmp (an environment or a checkout there) must land
    # on the new tmpfs, not be hidden by it.
    # /tmp and /dev/shm are tmpfs: host memory outside RLIMIT_AS, so each has a size. Both are the child's
    # own and writable by its uid (sticky, like the host's): Python's multiprocessing makes its semaphores in
    # /dev/shm, and without them Inductor's pool of compile workers never starts and every kernel of a
    # max-autotune compile is compiled one after another in the child.
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for tmpfs in ("/dev/shm", "/tmp"):
        argv += ["--size", str(c.tmp_bytes), "--perms", "1777", "--tmpfs", tmpfs]
        made.add(tmpfs)
    seen.update(("/proc", "/dev"))
    if host_sys:
        argv += ["--ro-bind", "/sys", "/sys"]
        seen.add("/sys")
    else:
        for path in _sys_paths():
            ro(path)
    for root in _readable_roots():
        ro(root)
    for name in _ETC_FILES:
        ro(Path("/etc") / name)
    for pkg in _project_packages():
        ro(pkg)
    if c.gpu:
        for node in _gpu_nodes():
            argv += ["--dev-bind", node, node]
    for path in c.read_only:
        ro(path)
    scratch = str(c.scratch.resolve())
    parents(scratch)
    argv += ["--bind", scratch, scratch, "--chdir", scratch]
    if _cache_mountable(c):
        parents(str(CACHE_MOUNT))
        argv += ["--bind", str(c.scratch.resolve() / ".cache"), str(CACHE_MOUNT)]
    return argv


def _cache_mountable(c: Confinement) -> bool:
    """Whether `<scratch>/.cache` can be bound at CACHE_MOUNT: a directory, and no scratch inside the mount point
    (a data_dir under /var/cache/kernelopt: the mount would hide the scratch itself)."""
    scratch = c.scratch.resolve()
    cache = scratch / ".cache"
    return cache.is_dir() and not cache.is_symlink() and not scratch.is_relative_to(CACHE_MOUNT)


def cache_mount(c: Confinement, layers: "Layers") -> Path | None:
    """Where a child confined as `c` sees `<scratch>/.cache`: CACHE_MOUNT in bubblewrap's fresh root (bwrap_argv
    binds it there), None where there is none (its scratch path is what it sees)."""
    bwrap = c.isolate and layers.enabled and layers.mechanism == "bwrap"
    return CACHE_MOUNT if bwrap and _cache_mountable(c) else None


def unshare_argv() -> list[str]:
    """Network and PID namespaces without bubblewrap (no fresh root: `filesystem` is off)."""
    argv = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        argv.insert(1, "--map-root-user")
    return argv


def setpriv_argv(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs"]


def command(c: Confinement, inner: Sequence[str], layers: "Layers") -> list[str]:
    """The full command line of a confined child: namespaces and fresh root → drop uid → `inner`.

    The namespaces come first because making them needs the caller's privileges
    (and its view of the filesystem, to bind the Python environment); the uid
    is dropped last, inside, so nothing submitted ever runs with them.
    """
    argv: list[str] = []
    if c.isolate:
        if layers.mechanism == "bwrap":
            argv += bwrap_argv(c, layers.bwrap or "bwrap", layers.host_sys)
        elif layers.mechanism == "unshare":
            argv += unshare_argv()
    if c.uid is not None and os.geteuid() == 0 and layers.on(Layer.UID):
        argv += setpriv_argv(c.uid)
    return argv + list(inner)


def rlimits_for(policy: SandboxPolicy, c: Confinement) -> dict[str, tuple[int, int | None]]:
    """The rlimits (resource module name -> (soft, hard)) the child applies to itself at start (isolation.entry).

    A hard limit of None keeps the inherited one: the job's orchestrator bounds its own memory with a soft limit
    only, because every child it starts inherits its limits and a GPU child must lift the address-space one
    (CUDA reserves far more than 16 GiB of it: with the orchestrator's bound set hard, every GPU child of a
    served or benched job failed its first CUDA allocation with "out of memory" on an H100, 2026-12-07)."""
    r = policy.rlimits
    if not c.isolate:  # a job's orchestrator: its memory only (it starts the job's children, runs no submission)
        bound = r.orchestrator_address_space_bytes if policy.enabled else None
        return {} if bound is None else {"RLIMIT_AS": (int(bound), None)}
    space = r.gpu_address_space_bytes if c.gpu else r.address_space_bytes
    # no limit: the child takes its hard limit, lifting a bound the parent set soft
    limits = {"RLIMIT_AS": resource.RLIM_INFINITY if space is None else space,
              "RLIMIT_CPU": r.cpu_seconds, "RLIMIT_FSIZE": r.file_size_bytes,
              "RLIMIT_NOFILE": r.open_files, "RLIMIT_NPROC": r.processes if c.uid is not None else None}
    return {k: (int(v), int(v)) for k, v in limits.items() if v is not None}


# --------------------------------------------------------------------------- what this machine can do

@dataclass(frozen=True)
class Layers:
    """Which sandbox layers this machine gives, found by trying each one."""

    available: dict[str, bool]
    reasons: dict[str, str]  # why a layer is off
    mechanism: str  # "bwrap" | "unshare" | "none"
    bwrap: str | None = None
    enabled: bool = True  # False: the operator switched the sandbox off
    host_sys: bool = False  # the host's /sys is bound whole: CUDA did not start with the curated one (reasons["sys"])

    def on(self, layer: Layer) -> bool:
        return self.enabled and self.available.get(layer.value, False)

    def off(self) -> list[str]:
        return [name for name in (layer.value for layer in ALL_LAYERS)
                if not (self.enabled and self.available.get(name, False))]

    def describe(self) -> str:
        if not self.enabled:
            return "sandbox switched off (KERNELOPT_SANDBOX=off): submitted code runs unconfined"
        off = self.off()
        notes = "".join(f"; {k}: {self.reasons[k]}" for k in ("sys", "cuda") if k in self.reasons)
        if not off:
            return f"sandbox: all layers on ({self.mechanism}){notes}"
        return (f"sandbox ({self.mechanism}): off: " + "; ".join(f"{n} ({self.reasons.get(n, '?')})" for n in off)
                + notes)

    def to_dict(self) -> dict:
        return asdict(self)


def _try(argv: list[str], timeout: float = 20.0, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=dict(env) if env is not None else {"PATH": _SAFE_PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    out = (p.stdout + p.stderr).strip()
    return p.returncode == 0, out.splitlines()[-1][:200] if out else f"exit {p.returncode}"


@functools.lru_cache(maxsize=4)
def probe_layers(policy: SandboxPolicy | None = None) -> Layers:
    """Try each layer once per process (a few hundred ms) and say which work."""
    policy = policy or SandboxPolicy.from_env()
    avail = {layer.value: False for layer in ALL_LAYERS}
    reasons: dict[str, str] = {}
    avail[Layer.ENV.value] = True
    avail[Layer.RLIMITS.value] = True
    py = sys.executable
    if os.geteuid() == 0:
        ok, why = _try(setpriv_argv(policy.uid_base) + [py, "-c", "import os; assert os.getuid() != 0"])
        avail[Layer.UID.value] = ok
        if not ok:
            reasons[Layer.UID.value] = f"setpriv could not drop to uid {policy.uid_base}: {why}"
    else:
        reasons[Layer.UID.value] = ("the service runs unprivileged (not root), so children keep its uid "
                                    "(inside a user namespace)")
    probe_code = ("import os, socket\n"
                  "assert os.getpid() <= 3, os.getpid()\n"
                  "s = socket.socket(); s.settimeout(1)\n"
                  "try:\n    s.connect(('10.255.255.1', 9)); raise SystemExit('network reachable')\n"
                  "except OSError: pass\n"
                  "print(len([n for n in os.listdir('/proc') if n.isdigit()]))\n")
    mechanism = "none"
    bwrap = policy.bwrap if policy.bwrap and os.access(policy.bwrap, os.X_OK) else (
        None if policy.bwrap else shutil.which("bwrap"))
    with tempfile.TemporaryDirectory(prefix="kernelopt-probe-") as tmp:
        secret = Path(tmp) / "outside"
        secret.mkdir()
        (secret / "service-secret").write_text("x")
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        os.chmod(tmp, 0o755)
        uid = policy.uid_base if avail[Layer.UID.value] else None
        give_to(scratch, uid)
        if bwrap:
            c = Confinement(scratch=scratch, uid=uid, gpu=False)
            layers = Layers(avail, reasons, "bwrap", bwrap)
            check = probe_code + (f"assert not os.path.exists({str(secret)!r}), 'service files visible'\n"
                                  "assert not os.path.exists('/sys/fs/cgroup'), 'the host /sys visible'\n"
                                  f"open({str(scratch / 'w')!r}, 'w').write('ok')\n")
            ok, why = _try(command(c, [py, "-c", check], layers))
            if ok:
                mechanism = "bwrap"
                for layer in (Layer.NETWORK, Layer.PID, Layer.FILESYSTEM):
                    avail[layer.value] = True
            else:
                reasons["bwrap"] = why
        else:
            reasons["bwrap"] = (f"no bubblewrap at KERNELOPT_SANDBOX_BWRAP={policy.bwrap}" if policy.bwrap
                                else "bubblewrap (bwrap) is not installed")
        if mechanism == "none" and shutil.which("unshare"):
            c = Confinement(scratch=scratch, uid=uid, gpu=False)
            ok, why = _try(command(c, [py, "-c", probe_code], Layers(avail, reasons, "unshare")))
            if ok:
                mechanism = "unshare"
                avail[Layer.NETWORK.value] = avail[Layer.PID.value] = True
                reasons[Layer.FILESYSTEM.value] = f"no bubblewrap ({reasons.get('bwrap', '')})"
            else:
                reasons["unshare"] = why
    for layer in (Layer.NETWORK, Layer.PID, Layer.FILESYSTEM):
        if not avail[layer.value]:
            reasons.setdefault(layer.value, "; ".join(f"{k}: {v}" for k, v in reasons.items()
                                                     if k in ("bwrap", "unshare")) or "no namespace tool")
    avail[Layer.SYSCALLS.value], why = _probe_syscall_filter(policy, avail[Layer.UID.value])
    if why:
        reasons[Layer.SYSCALLS.value] = why
    layers = Layers(avail, reasons, mechanism, bwrap if mechanism == "bwrap" else None, policy.enabled)
    return _probe_cuda(policy, layers) if mechanism == "bwrap" and _gpu_nodes() else layers


# Installs the filter, then checks what it must refuse is refused and what the stages need still works.
_FILTER_PROBE = """
import ctypes, os, subprocess, sys, threading
sys.path.insert(0, sys.argv[1])
from kernelopt.isolation import syscall_filter
syscall_filter.install()
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(syscall_filter.CLONE_NEWUSER) == -1 and ctypes.get_errno() == 1, "a user namespace was made"
t = threading.Thread(target=lambda: None); t.start(); t.join()
assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0, "no process could be started"
"""


def _probe_syscall_filter(policy: SandboxPolicy, drop_uid: bool) -> tuple[bool, str]:
    from kernelopt.isolation import syscall_filter

    why = syscall_filter.unsupported_reason()
    if why:
        return False, why
    argv = (setpriv_argv(policy.uid_base) if drop_uid else []) + [sys.executable, "-c", _FILTER_PROBE,
                                                                  str(PROJECT_ROOT)]
    ok, why = _try(argv)
    return ok, "" if ok else f"the kernel refused the seccomp filter, or it did not hold: {why}"


# Starts the CUDA driver as a stage would (through the same libcuda), after installing the seccomp filter
# when asked to: the curated /sys and the filter were written from what CUDA reads and calls, and a driver
# that needs more must not leave a GPU machine unable to run any job.
_CUDA_PROBE = """
import ctypes, sys
if sys.argv[2] == "filter":
    sys.path.insert(0, sys.argv[1])
    from kernelopt.isolation import syscall_filter
    syscall_filter.install()
cuda = ctypes.CDLL("libcuda.so.1")
rc = cuda.cuInit(0)
assert rc == 0, f"cuInit returned {rc}"
n = ctypes.c_int()
rc = cuda.cuDeviceGetCount(ctypes.byref(n))
assert rc == 0 and n.value > 0, f"cuDeviceGetCount returned {rc}, {n.value} devices"
"""


def _probe_cuda(policy: SandboxPolicy, layers: Layers) -> Layers:
    """On a GPU machine: the sandbox as configured must let CUDA start; where it does not but an unconfined
    process can, the first arrangement that works is kept — the host's /sys, then no seccomp filter — and
    the reason is reported beside the layers (/readyz, `python -m kernelopt.isolation.sandbox`)."""
    import dataclasses

    env = {"PATH": _SAFE_PATH, **{k: os.environ[k] for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")
                                   if k in os.environ}}
    filter_on = layers.available.get(Layer.SYSCALLS.value, False)
    with tempfile.TemporaryDirectory(prefix="kernelopt-probe-") as tmp:
        os.chmod(tmp, 0o755)
        uid = policy.uid_base if layers.available.get(Layer.UID.value) else None
        give_to(Path(tmp), uid)
        c = Confinement(scratch=Path(tmp), uid=uid, gpu=True)

        def starts(host_sys: bool, with_filter: bool) -> tuple[bool, str]:
            trial = dataclasses.replace(layers, host_sys=host_sys)
            inner = [sys.executable, "-c", _CUDA_PROBE, str(PROJECT_ROOT), "filter" if with_filter else "none"]
            return _try(command(c, inner, trial), env=env, timeout=60)

        ok, why = starts(False, filter_on)
        if ok:
            return layers
        unconfined, _ = _try([sys.executable, "-c", _CUDA_PROBE, str(PROJECT_ROOT), "none"], env=env, timeout=60)
        if not unconfined:  # no working driver here at all: nothing the sandbox could change
            return layers
        reasons = dict(layers.reasons)
        tries = [(True, filter_on)] + ([(False, False), (True, False)] if filter_on else [])
        for host_sys, with_filter in tries:
            if starts(host_sys, with_filter)[0]:
                avail = dict(layers.available)
                if host_sys:
                    reasons["sys"] = f"CUDA did not start with the sandbox's view of /sys ({why}): the host's is bound"
                if filter_on and not with_filter:
                    avail[Layer.SYSCALLS.value] = False
                    reasons[Layer.SYSCALLS.value] = f"CUDA did not start under the seccomp filter ({why})"
                return dataclasses.replace(layers, available=avail, reasons=reasons, host_sys=host_sys)
        reasons["cuda"] = f"CUDA did not start inside the sandbox: {why}"
        return dataclasses.replace(layers, reasons=reasons)


def iter_layer_lines(layers: Layers) -> Iterator[str]:
    for layer in ALL_LAYERS:
        state = "on" if layers.on(layer) else f"OFF ({layers.reasons.get(layer.value, 'switched off')})"
        yield f"  {layer.value:<10} {state}"


def main() -> None:  # python -m kernelopt.isolation.sandbox: what this machine gives
    layers = probe_layers()
    print(layers.describe())
    for line in iter_layer_lines(layers):
        print(line)
    if "--json" in sys.argv:
        print(json.dumps(layers.to_dict()))


if __name__ == "__main__":
    main()
