"""The program every child runs: `python -m kernelopt.isolation.entry FD RLIMITS_JSON [--syscall-filter]`.

Applies its rlimits (and, in a sandboxed child, the seccomp filter of
isolation.syscall_filter) before anything else, then answers calls `(fn, arg)` read
from the socket FD (pickles from the trusted parent) with `("ok", result)` or
`("error", exception type, message, traceback, exception)`, until the parent sends None or
closes the socket. Nothing of the parent's interpreter state is inherited:
the command line and environment are all a child is given.
"""
from __future__ import annotations

import json
import pickle
import resource
import sys
import traceback
from multiprocessing.connection import Connection


def _at_most(value: int, bound: int) -> int:
    """The smaller of two rlimit values, RLIM_INFINITY (-1) being the largest."""
    if value == resource.RLIM_INFINITY:
        return bound
    return value if bound == resource.RLIM_INFINITY else min(value, bound)


def apply_rlimits(limits: dict[str, list]) -> None:
    """NAME -> [soft, hard] (isolation.sandbox.rlimits_for): a hard limit of None keeps the inherited one, so
    this process's own children may raise the soft limit back; no value passes the inherited hard limit (an
    unprivileged process cannot raise it), and RLIM_INFINITY asks for that hard limit."""
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name)
        _, inherited = resource.getrlimit(which)
        hard = inherited if hard is None else _at_most(hard, inherited)
        resource.setrlimit(which, (_at_most(soft, hard), hard))


def _reply(fn, arg) -> bytes:
    reply: tuple
    try:
        reply = ("ok", fn(arg))
    except BaseException as exc:  # noqa: BLE001 - everything must reach the parent
        # A typed stage error (class attribute `crosses_sandbox`) travels as itself, so the parent
        # reads its fields instead of parsing its message; any other exception as its name and text.
        typed = exc if getattr(type(exc), "crosses_sandbox", False) else None
        reply = ("error", type(exc).__name__, str(exc), traceback.format_exc(), typed)
    try:
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an unpicklable result is the stage's bug, reported as such
        return pickle.dumps(("error", type(exc).__name__, f"the result could not be sent: {exc}",
                             traceback.format_exc(), None))


def main(argv: list[str]) -> None:
    fd, limits = int(argv[0]), json.loads(argv[1])
    apply_rlimits(limits)
    if "--syscall-filter" in argv[2:]:
        from kernelopt.isolation import syscall_filter

        syscall_filter.install()  # the probe found the kernel takes it: a refusal here ends the child
    conn = Connection(fd)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        msg = pickle.loads(data)  # from the parent, which is trusted
        if msg is None:
            return
        fn, arg = msg
        try:
            conn.send_bytes(_reply(fn, arg))
        except (BrokenPipeError, ConnectionResetError):
            return  # the parent is gone (stopped, killed, timed out): nobody to answer, nothing to print


if __name__ == "__main__":
    main(sys.argv[1:])
