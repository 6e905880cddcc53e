"""Run stage functions in child processes, each started in the sandbox.

Every stage that imports a submission, launches a kernel or touches CUDA runs
in a child: a crash, an illegal memory access, a hang or a `sys.exit` in
submitted code ends only the child, and the parent gets a `ChildError` that
says which. A child is started with an explicit command (`python -m
kernelopt.isolation.entry`) inside the sandbox (`isolation.sandbox`: its own uid, an
allow-listed environment, no network, its own PID namespace, a fresh root where
only its scratch directory is writable, rlimits), and its reply is decoded
with `isolation.safe_pickle`, so submitted code can neither reach the service
nor run code in the parent through its answer.

The parent never initialises CUDA, so it can start any number of children and
pin each to a GPU through its environment.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from enum import Enum
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from kernelopt.isolation import child_output, safe_pickle
from kernelopt.isolation.sandbox import (
    SANDBOX_DIRS,
    Confinement,
    Layer,
    Layers,
    SandboxPolicy,
    UidLease,
    cache_mount,
    child_environment,
    command,
    give_to,
    lease_uid,
    probe_layers,
    remove_links,
    rlimits_for,
    uses_gpu,
)

In = TypeVar("In")
Out = TypeVar("Out")


class ChildErrorKind(str, Enum):
    EXCEPTION = "exception"  # the stage raised (exc_type names the exception)
    TIMEOUT = "timeout"
    CRASH = "crash"  # died without an answer: segfault, CUDA abort, a kill by an rlimit or the OOM killer
    PROTOCOL = "protocol"  # answered with something that is not a result (see safe_pickle)


@dataclass
class ChildError(Exception):
    """A stage's child process did not return a result."""

    kind: str  # a ChildErrorKind value
    message: str
    traceback: str = ""
    exc_type: str = ""  # for kind "exception": the exception's class name in the child
    error: BaseException | None = None  # for kind "exception": a typed stage error, as raised in the child

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


# --------------------------------------------------------------------------- the job's sandbox

# The uid held by the job this thread orchestrates (threads: the embedded dispatcher's slots, bench's GPUs).
_held = threading.local()


def _job_lease() -> UidLease | None:
    return getattr(_held, "lease", None)


def in_job_threads(*calls: Callable[[], Out]) -> list[Out]:
    """Run `calls` at once, each in a thread that holds this thread's job sandbox (its uid lease), so the
    children they start are the job's like any other; results in order, the first exception raised."""
    from concurrent.futures import ThreadPoolExecutor

    lease = _job_lease()

    def held(call: Callable[[], Out]) -> Out:
        _held.lease = lease
        try:
            return call()
        finally:
            _held.lease = None

    with ThreadPoolExecutor(max_workers=max(len(calls), 1)) as pool:
        futures = [pool.submit(held, c) for c in calls]
        return [f.result() for f in futures]


def sandbox_policy() -> SandboxPolicy:
    return SandboxPolicy.from_env()


def sandbox_layers() -> Layers:
    return probe_layers(sandbox_policy())


class job_sandbox:
    """Hold one sandbox uid for a whole job, so that all its children share their scratch files.

    Without it a parent running as root leases a uid per child. Not needed (a
    no-op) where the process is not root: its children keep its uid.
    """

    def __init__(self) -> None:
        self.lease: UidLease | None = None

    def __enter__(self) -> "job_sandbox":
        policy = sandbox_policy()
        if policy.enabled and sandbox_layers().on(Layer.UID) and _job_lease() is None:
            self.lease = lease_uid(policy)
            _held.lease = self.lease
        return self

    @property
    def uid(self) -> int | None:
        return self.lease.uid if self.lease else None

    def __exit__(self, *exc) -> None:
        if self.lease:
            _held.lease = None
            self.lease.release()


# --------------------------------------------------------------------------- one child process

class _Child:
    """One started child: the process (group leader) and the parent's end of its socket."""

    def __init__(self, env: dict[str, str] | None, scratch: str | os.PathLike | None,
                 read_only: Sequence[str | os.PathLike], trusted: bool, uid: int | None = None):
        policy = sandbox_policy()
        layers = sandbox_layers()
        self._tmp_scratch: str | None = None
        self._own_lease: UidLease | None = None
        if scratch is None:
            self._tmp_scratch = tempfile.mkdtemp(prefix="kernelopt-scratch-")
            os.chmod(self._tmp_scratch, 0o700)
            scratch = self._tmp_scratch
        scratch_path = Path(scratch).resolve()
        scratch_path.mkdir(parents=True, exist_ok=True)
        if uid is None and policy.enabled and layers.on(Layer.UID):
            lease = _job_lease()
            if lease is None:
                lease = self._own_lease = lease_uid(policy)
            uid = lease.uid if lease else None
        if uid is None and policy.enabled:
            # A job's orchestrator already runs as the job's uid (the worker dropped it there): its
            # children keep that uid, and count their processes against it like any job's.
            uid = policy.job_uid_of_this_process()
        gpu = uses_gpu({**os.environ, **(env or {})})
        confinement = Confinement(scratch=scratch_path, read_only=tuple(Path(os.path.abspath(p)) for p in read_only),
                                  uid=uid, gpu=gpu, isolate=policy.enabled and not trusted,
                                  tmp_bytes=policy.tmp_bytes)
        # the caches' directory exists before bubblewrap binds it at the one path every job's children see
        for d in SANDBOX_DIRS:
            os.makedirs(scratch_path / d, exist_ok=True)
        child_env = child_environment(scratch_path, env, cache_at=cache_mount(confinement, layers))
        give_to(scratch_path, uid)
        self.scratch, self.confined = scratch_path, confinement.isolate
        self.max_reply_bytes = policy.max_reply_bytes
        parent_sock, child_sock = socket.socketpair()
        inner = [sys.executable, "-m", "kernelopt.isolation.entry", str(child_sock.fileno()),
                 json.dumps(rlimits_for(policy, confinement))]
        if confinement.isolate and layers.on(Layer.SYSCALLS):
            inner.append("--syscall-filter")
        argv = command(confinement, inner, layers) if policy.enabled else inner
        try:
            # its output through a pipe: into this process's log escaped and prefixed, never verbatim
            self.proc = subprocess.Popen(argv, env=child_env, cwd=str(scratch_path), pass_fds=(child_sock.fileno(),),
                                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT)
        finally:
            child_sock.close()
        assert self.proc.stdout is not None
        self._output = child_output.forward(self.proc.stdout, child_output.label(self.proc.pid, child_env))
        self.conn = Connection(parent_sock.detach())

    def call(self, fn: Callable[[In], Out], arg: In, timeout_s: float) -> Out:
        try:
            self.conn.send_bytes(_dumps((fn, arg)))
            if not self.conn.poll(timeout_s):
                raise ChildError(ChildErrorKind.TIMEOUT.value, f"{_name(fn)} did not finish within {timeout_s:.0f} s")
            data = self.conn.recv_bytes(self.max_reply_bytes)
        except OSError as exc:
            if "bad message length" in str(exc):  # refused before it was read: the parent stays its size
                raise ChildError(ChildErrorKind.PROTOCOL.value, f"{_name(fn)} answered more than "
                                 f"{self.max_reply_bytes >> 20} MiB (KERNELOPT_SANDBOX_MAX_REPLY_MIB): results are "
                                 "plain data, tensors travel as files") from None
            return self._died(fn)
        except EOFError:
            return self._died(fn)
        try:
            msg = safe_pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - whatever the child sent, it is not a result
            raise ChildError(ChildErrorKind.PROTOCOL.value,
                             f"{_name(fn)} answered with something that is not a result: {exc}") from None
        if isinstance(msg, tuple) and len(msg) == 2 and msg[0] == "ok":
            return msg[1]
        if isinstance(msg, tuple) and len(msg) == 5 and msg[0] == "error":
            _, exc_type, text, tb, typed = msg
            if typed is not None and not (isinstance(typed, BaseException)
                                          and getattr(type(typed), "crosses_sandbox", False)):
                raise ChildError(ChildErrorKind.PROTOCOL.value, f"{_name(fn)} raised an untyped error object")
            raise ChildError(ChildErrorKind.EXCEPTION.value, f"{exc_type}: {text}", str(tb), str(exc_type), typed)
        raise ChildError(ChildErrorKind.PROTOCOL.value, f"{_name(fn)} answered with a malformed message")

    def _died(self, fn: Callable) -> Any:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        raise ChildError(ChildErrorKind.CRASH.value, f"{_name(fn)} died without a result (exit code {_exit_code(code)})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, graceful: bool = True) -> None:
        if graceful and self.alive():
            try:
                self.conn.send_bytes(_dumps(None))
                self.proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        kill_tree(self.proc.pid)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()
        if self.confined:
            remove_links(self.scratch)
        if self._own_lease is not None:
            self._own_lease.release()
            self._own_lease = None
        if self._tmp_scratch is not None:
            shutil.rmtree(self._tmp_scratch, ignore_errors=True)
            self._tmp_scratch = None


def _dumps(obj: Any) -> bytes:
    import pickle

    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _exit_code(code: int | None) -> str:
    """An exit status for people: a signal by name (bubblewrap reports one as 128 + its number)."""
    if code is None:
        return "unknown"
    sig = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None
    if sig is not None:
        try:
            return f"{code}, {signal.Signals(sig).name}"
        except ValueError:
            pass
    return str(code)


def run_in_child(
    fn: Callable[[In], Out],
    arg: In,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    scratch: str | os.PathLike | None = None,
    read_only: Sequence[str | os.PathLike] = (),
    trusted: bool = False,
    uid: int | None = None,
) -> Out:
    """Call `fn(arg)` in a sandboxed child process and return its result.

    `fn` must be a module-level function and `arg` and the result picklable
    (the result: plain data, see safe_pickle). `scratch` is the child's one
    writable directory (None: a fresh private one, removed afterwards) and
    `read_only` what else it may read. `trusted=True` is for children that run
    no submitted code (the orchestrator of a job): curated environment and
    uid, but no namespaces. Raises ChildError on an exception in the child, a
    timeout (the child is killed), a crash (it died without answering) or a
    reply that is not a result.
    """
    child = _Child(env, scratch, read_only, trusted, uid)
    try:
        return child.call(fn, arg, timeout_s)
    finally:
        child.close(graceful=False)


# --------------------------------------------------------------------------- killing

def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc; best effort, empty elsewhere)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
        for child in children:
            found += [child] + descendants(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`, its process group, and every process below it.

    A sandboxed child's processes live in a PID namespace whose init is below
    `pid`: killing it ends every one of them, `setsid` daemons included. The
    tree is collected first, then every member and its group killed, for
    children that run without the PID layer.
    """
    for p in descendants(pid) + [pid]:  # `pid` last: it may be this very process
        for kill in (os.killpg, os.kill):
            try:
                kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", repr(fn))


# Sessions still open at interpreter exit are closed first, so no child outlives
# its parent waiting for a call that never comes.
_open_sessions: "weakref.WeakSet[ChildSession]" = weakref.WeakSet()
def _close_open_sessions() -> None:
    for session in list(_open_sessions):
        session.close()


atexit.register(_close_open_sessions)


class ChildSession:
    """A long-lived sandboxed child that runs many calls, keeping state between them.

    Used where one child must serve many small requests (evaluating batches of
    candidates against the same captured kernel inputs) without paying the
    start-up of torch and the compiled module for each, or consecutive stages
    of one job (load, compile, profile). A crash or timeout kills the session
    and everything it started; `call` raises ChildError and the next call
    starts a fresh process.
    """

    def __init__(self, env: dict[str, str] | None = None, *, scratch: str | os.PathLike | None = None,
                 read_only: Sequence[str | os.PathLike] = ()):
        self.env = dict(env or {})
        self.scratch = scratch
        self.read_only = tuple(read_only)
        self._child: _Child | None = None
        _open_sessions.add(self)

    def start(self) -> "ChildSession":
        """Start the child now, in this thread: a sandboxed child dies with the thread that started it
        (bubblewrap's --die-with-parent), so a session whose calls come from worker threads
        (in_job_threads) is started by the thread that outlives them."""
        if self._child is None or not self._child.alive():
            self.close()
            self._child = _Child(self.env, self.scratch, self.read_only, trusted=False)
        return self

    def call(self, fn: Callable[[In], Out], arg: In, *, timeout_s: float) -> Out:
        self.start()
        assert self._child is not None
        try:
            return self._child.call(fn, arg, timeout_s)
        except ChildError as exc:
            if exc.kind != ChildErrorKind.EXCEPTION.value:
                self.close()
            raise

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child = None

    def __enter__(self) -> "ChildSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
