"""Run one stage function in a fresh child process.

Every stage that imports a submission, launches a kernel or touches CUDA runs
here: a crash, an illegal memory access, a hang or a `sys.exit` in submitted
code ends only the child, and the parent gets a `ChildError` that says which.
The parent never initialises CUDA, so it can fork-free start any number of
children and pin each to a GPU through its environment.
"""
from __future__ import annotations

import atexit
import multiprocessing as mp
import multiprocessing.util  # noqa: F401 - registers its exit handler before ours (see _open_sessions)
import os
import threading
import traceback
import weakref
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

# `spawn` environments are copied from os.environ when the child starts, and
# some variables (TRITON_INTERPRET, CUDA_VISIBLE_DEVICES) must be in place
# before the child imports anything; the lock keeps concurrent starts apart.
_env_lock = threading.Lock()


def _start_with_env(proc, env: dict[str, str] | None) -> None:
    """Start `proc` with `env` added to the environment it copies at start."""
    with _env_lock:
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            proc.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@dataclass
class ChildError(Exception):
    """A stage's child process did not return a result."""

    kind: str  # "exception" | "timeout" | "crash"
    message: str
    traceback: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _lead_process_group() -> None:
    # Lead a process group of our own, so that a timeout kills this child and
    # every process it started (a job child starts stage children of its own;
    # Inductor starts compile workers).
    try:
        os.setsid()
    except OSError:
        pass


def _child_main(conn, fn: Callable[[Any], Any], arg: Any) -> None:
    _lead_process_group()
    try:
        result = fn(arg)
        conn.send(("ok", result))
    except BaseException as exc:  # noqa: BLE001 - everything must reach the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


def run_in_child(
    fn: Callable[[In], Out],
    arg: In,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
) -> Out:
    """Call `fn(arg)` in a spawned process and return its result.

    `fn` must be a module-level function and `arg` and the result picklable.
    Raises ChildError on an exception in the child, a timeout (the child is
    killed) or a crash (the child died without answering: segfault, CUDA abort,
    out-of-memory kill).
    """
    ctx = mp.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(child_conn, fn, arg), daemon=False)
    _start_with_env(proc, env)
    child_conn.close()
    try:
        if not parent_conn.poll(timeout_s):
            raise ChildError("timeout", f"{_name(fn)} did not finish within {timeout_s:.0f} s")
        try:
            msg = parent_conn.recv()
        except EOFError:
            proc.join(5)
            raise ChildError("crash", f"{_name(fn)} died without a result (exit code {proc.exitcode})")
        if msg[0] == "ok":
            return msg[1]
        raise ChildError("exception", msg[1], msg[2])
    finally:
        _kill_group(proc)
        proc.join(10)
        parent_conn.close()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc; best effort, empty elsewhere)."""
    from pathlib import Path

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

    A stage child leads a process group of its own (os.setsid), so killing a
    job's group alone would leave its stage children, and their GPU work,
    running: the tree is collected first, then every member and its group killed.
    """
    import signal

    for p in descendants(pid) + [pid]:  # `pid` last: it may be this very process
        for kill in (os.killpg, os.kill):
            try:
                kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass


def _kill_group(proc) -> None:
    """Kill the child and everything it started, if still there."""
    if proc.pid is None:
        return
    kill_tree(proc.pid)
    if proc.is_alive():
        proc.kill()


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def _session_main(conn) -> None:
    _lead_process_group()
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        fn, arg = msg
        try:
            conn.send(("ok", fn(arg)))
        except BaseException as exc:  # noqa: BLE001
            conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))


# Sessions still open at interpreter exit are closed first: multiprocessing's own
# exit handler joins non-daemonic children, and a session child waits for its
# next call until its pipe closes. (atexit runs handlers last-registered first.)
_open_sessions: "weakref.WeakSet[ChildSession]" = weakref.WeakSet()
atexit.register(lambda: [s.close() for s in list(_open_sessions)])


class ChildSession:
    """A long-lived child process that runs many calls, keeping state between them.

    Used where one child must serve many small requests (evaluating batches of
    candidates against the same captured kernel inputs) without paying the
    start-up of torch and the compiled module for each, or consecutive stages
    of one job (load, compile, profile). A crash or timeout kills the session
    and everything it started; `call` raises ChildError and the next call
    starts a fresh process.
    """

    def __init__(self, env: dict[str, str] | None = None):
        self.env = dict(env or {})
        self._proc = None
        self._conn = None
        _open_sessions.add(self)

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child_conn = ctx.Pipe(duplex=True)
        # Not a daemon: a stage may start processes of its own (Inductor's compile
        # workers, max-autotune's benchmark pool), which daemons may not.
        proc = ctx.Process(target=_session_main, args=(child_conn,), daemon=False)
        _start_with_env(proc, self.env)
        child_conn.close()
        self._proc = proc

    def call(self, fn: Callable[[In], Out], arg: In, *, timeout_s: float) -> Out:
        if self._proc is None or not self._proc.is_alive():
            self.close()
            self._start()
        try:
            self._conn.send((fn, arg))
            if not self._conn.poll(timeout_s):
                self.close()
                raise ChildError("timeout", f"{_name(fn)} did not finish within {timeout_s:.0f} s")
            msg = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc else None
            self.close()
            raise ChildError("crash", f"{_name(fn)} died without a result (exit code {code})") from None
        if msg[0] == "ok":
            return msg[1]
        raise ChildError("exception", msg[1], msg[2])

    def close(self) -> None:
        if self._proc is not None:
            try:
                if self._proc.is_alive():
                    self._conn.send(None)
                    self._proc.join(2)
            except (OSError, BrokenPipeError):
                pass
            _kill_group(self._proc)
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = None
        self._conn = None

    def __enter__(self) -> "ChildSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
