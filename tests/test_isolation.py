"""The child-process runner: results, exceptions, crashes and timeouts end cleanly."""
import os
import time

import pytest

from kernelopt.isolation import ChildError, ChildSession, run_in_child
from tests import TESTS_DIR as TESTS  # the children below run this module's functions


def _square(x):
    return x * x


def _raise(msg):
    raise ValueError(msg)


def _crash(_):
    os._exit(3)


def _sleep(s):
    time.sleep(s)


def _env(name):
    return os.environ.get(name)


_calls = [0]


def _counter(_):
    _calls[0] += 1
    return _calls[0]


def test_result_comes_back():
    assert run_in_child(_square, 7, timeout_s=60, read_only=TESTS) == 49


def test_exception_is_reported_with_traceback():
    with pytest.raises(ChildError) as err:
        run_in_child(_raise, "bad input", timeout_s=60, read_only=TESTS)
    assert err.value.kind == "exception"
    assert "ValueError: bad input" in err.value.message
    assert "_raise" in err.value.traceback


def test_crash_is_reported():
    with pytest.raises(ChildError) as err:
        run_in_child(_crash, None, timeout_s=60, read_only=TESTS)
    assert err.value.kind == "crash"
    assert "exit code 3" in err.value.message


def test_timeout_kills_the_child():
    t0 = time.monotonic()
    with pytest.raises(ChildError) as err:
        run_in_child(_sleep, 30, timeout_s=3, read_only=TESTS)
    assert err.value.kind == "timeout"
    assert time.monotonic() - t0 < 20


def test_only_allow_listed_environment_reaches_the_child(monkeypatch):
    monkeypatch.setenv("KERNELOPT_DATABASE_URL", "postgresql://secret@db/x")
    assert run_in_child(_env, "TORCHINDUCTOR_TEST_VAR", timeout_s=60, read_only=TESTS, env={"TORCHINDUCTOR_TEST_VAR": "x"}) == "x"
    assert run_in_child(_env, "KERNELOPT_DATABASE_URL", timeout_s=60, read_only=TESTS) is None
    assert run_in_child(_env, "KERNELOPT_TEST_VAR", timeout_s=60, read_only=TESTS, env={"KERNELOPT_TEST_VAR": "x"}) is None
    assert "TORCHINDUCTOR_TEST_VAR" not in os.environ


def test_session_keeps_state_and_restarts_after_a_crash():
    with ChildSession(read_only=TESTS) as session:
        assert session.call(_counter, None, timeout_s=60) == 1
        assert session.call(_counter, None, timeout_s=60) == 2
        with pytest.raises(ChildError) as err:
            session.call(_crash, None, timeout_s=60)
        assert err.value.kind == "crash"
        assert session.call(_counter, None, timeout_s=60) == 1  # a fresh process


def _processes_with(marker: str) -> list[int]:
    """Live processes (seen from here, whatever namespace they run in) whose command line holds `marker`."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if marker in cmd and not zombie and "pytest" not in cmd:
            found.append(int(d))
    return found


def _start_grandchildren(marker):
    """Like Inductor's compile workers: processes of our own, one in a session of its own (a daemon)."""
    import multiprocessing as mp
    import subprocess

    worker = mp.get_context("spawn").Process(target=time.sleep, args=(60,))
    worker.start()
    subprocess.Popen(["sleep", marker])
    subprocess.Popen(["setsid", "sh", "-c", f"exec sleep {marker}"])
    time.sleep(0.5)
    return worker.pid


def _gone(marker: str, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _processes_with(marker)


def test_session_may_start_processes_and_closing_it_ends_them():
    marker = "61.%d" % (time.time_ns() % 10**6)
    session = ChildSession(read_only=TESTS)
    session.call(_start_grandchildren, marker, timeout_s=60)
    assert len(_processes_with(marker)) == 2
    session.close()
    assert _gone(marker), "a closed session left its processes running"


def test_an_unclosed_session_does_not_hang_interpreter_exit(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "leave_open.py"
    script.write_text(
        "from kernelopt.isolation import ChildSession\n"
        "from tests.test_isolation import TESTS, _square\n"
        "if __name__ == '__main__':\n"
        "    s = ChildSession(read_only=TESTS)\n"
        "    print(s.call(_square, 6, timeout_s=60))\n"  # exits without s.close()
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "36"


def _job_that_hangs(marker):
    """A child whose stage runs in a session of its own (as a `setsid` daemon would), then hangs."""
    import subprocess

    subprocess.Popen(["setsid", "sleep", marker])
    time.sleep(60)


def test_timeout_kills_processes_in_sessions_of_their_own():
    marker = "62.%d" % (time.time_ns() % 10**6)
    with pytest.raises(ChildError) as err:
        run_in_child(_job_that_hangs, marker, timeout_s=5, read_only=TESTS)
    assert err.value.kind == "timeout"
    assert _gone(marker), "a timed-out child left a process running"


def _reply_with_code(_):
    """A child that answers with a pickle that would run a command in an unguarded parent."""
    import os as _os

    class Evil:
        def __reduce__(self):
            return (_os.system, ("touch /tmp/kernelopt-pwned",))

    return Evil()


def test_a_reply_that_would_run_code_in_the_parent_is_refused():
    if os.path.exists("/tmp/kernelopt-pwned"):
        os.remove("/tmp/kernelopt-pwned")
    with pytest.raises(ChildError) as err:
        run_in_child(_reply_with_code, None, timeout_s=60, read_only=TESTS)
    assert err.value.kind == "protocol"
    assert "posix.system" in err.value.message or "system" in err.value.message
    assert not os.path.exists("/tmp/kernelopt-pwned")


def test_the_exception_type_is_reported_apart_from_its_message():
    with pytest.raises(ChildError) as err:
        run_in_child(_raise, "bad input", timeout_s=60, read_only=TESTS)
    assert err.value.exc_type == "ValueError"


def test_a_child_whose_parent_left_before_the_answer_exits_quietly():
    # A stopped bench leaves children mid-call; their answer has no reader. The child must end, and say
    # nothing (a BrokenPipeError traceback in a bench's log was seen on the H200).
    import pickle
    import socket
    import subprocess
    import sys
    from pathlib import Path

    parent, child = socket.socketpair()
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "kernelopt.isolation.entry", str(child.fileno()), "{}"],
                            pass_fds=[child.fileno()], stderr=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(repo), "PATH": os.environ.get("PATH", "")})
    child.close()
    from multiprocessing.connection import Connection

    conn = Connection(os.dup(parent.fileno()))
    parent.close()
    conn.send_bytes(pickle.dumps((time.sleep, 1.0)))
    conn.close()  # gone before the answer
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == "", err


def _huge_reply(mib):
    return b"x" * (mib << 20)


def _allocate(mib):
    return len(bytearray(mib << 20))


def test_a_reply_past_the_limit_is_refused_unread(monkeypatch):
    """A child streaming a huge answer (1 GiB once grew a job's orchestrator to 2.1 GB) is refused by its
    length before the parent reads it (issue 36, item 3)."""
    monkeypatch.setenv("KERNELOPT_SANDBOX_MAX_REPLY_MIB", "4")
    assert len(run_in_child(_huge_reply, 2, timeout_s=60, read_only=TESTS)) == 2 << 20
    with pytest.raises(ChildError) as err:
        run_in_child(_huge_reply, 16, timeout_s=60, read_only=TESTS)
    assert err.value.kind == "protocol" and "answered more than 4 MiB" in err.value.message


def test_a_job_orchestrator_runs_under_its_own_memory_bound(monkeypatch):
    """A trusted child (a job's orchestrator: no namespaces) is bounded in address space too."""
    monkeypatch.setenv("KERNELOPT_SANDBOX_ORCHESTRATOR_MIB", "1536")
    assert run_in_child(_allocate, 64, timeout_s=60, read_only=TESTS, trusted=True) == 64 << 20
    with pytest.raises(ChildError) as err:
        run_in_child(_allocate, 3072, timeout_s=60, read_only=TESTS, trusted=True)
    assert err.value.kind == "exception" and "MemoryError" in err.value.message
