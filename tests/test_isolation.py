"""The child-process runner: results, exceptions, crashes and timeouts end cleanly."""
import os
import time

import pytest

from isolation import ChildError, ChildSession, run_in_child


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
    assert run_in_child(_square, 7, timeout_s=60) == 49


def test_exception_is_reported_with_traceback():
    with pytest.raises(ChildError) as err:
        run_in_child(_raise, "bad input", timeout_s=60)
    assert err.value.kind == "exception"
    assert "ValueError: bad input" in err.value.message
    assert "_raise" in err.value.traceback


def test_crash_is_reported():
    with pytest.raises(ChildError) as err:
        run_in_child(_crash, None, timeout_s=60)
    assert err.value.kind == "crash"
    assert "exit code 3" in err.value.message


def test_timeout_kills_the_child():
    t0 = time.monotonic()
    with pytest.raises(ChildError) as err:
        run_in_child(_sleep, 30, timeout_s=3)
    assert err.value.kind == "timeout"
    assert time.monotonic() - t0 < 20


def test_environment_reaches_the_child_only():
    assert run_in_child(_env, "KERNELOPT_TEST_VAR", timeout_s=60, env={"KERNELOPT_TEST_VAR": "x"}) == "x"
    assert "KERNELOPT_TEST_VAR" not in os.environ


def test_session_keeps_state_and_restarts_after_a_crash():
    with ChildSession() as session:
        assert session.call(_counter, None, timeout_s=60) == 1
        assert session.call(_counter, None, timeout_s=60) == 2
        with pytest.raises(ChildError) as err:
            session.call(_crash, None, timeout_s=60)
        assert err.value.kind == "crash"
        assert session.call(_counter, None, timeout_s=60) == 1  # a fresh process


def _start_grandchild(_):
    """Like Inductor's compile workers: a process of our own (a daemon child could not start one)."""
    import multiprocessing as mp
    import subprocess

    worker = mp.get_context("spawn").Process(target=time.sleep, args=(60,))
    worker.start()
    sleeper = subprocess.Popen(["sleep", "60"])
    return worker.pid, sleeper.pid


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_session_may_start_processes_and_closing_it_ends_them():
    session = ChildSession()
    pids = session.call(_start_grandchild, None, timeout_s=60)
    assert all(_alive(p) for p in pids)
    session.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "a closed session left its processes running"


def test_an_unclosed_session_does_not_hang_interpreter_exit(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "leave_open.py"
    script.write_text(
        "from isolation import ChildSession\n"
        "from tests.test_isolation import _square\n"
        "if __name__ == '__main__':\n"
        "    s = ChildSession()\n"
        "    print(s.call(_square, 6, timeout_s=60))\n"  # exits without s.close()
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "36"


def _job_that_hangs(pid_file):
    """A job child whose stage runs in a process group of its own (as stage children do), then hangs."""
    import subprocess

    stage = subprocess.Popen(["setsid", "sleep", "60"])
    with open(pid_file, "w") as f:
        f.write(str(stage.pid))
    time.sleep(60)


def test_timeout_kills_stages_in_process_groups_of_their_own(tmp_path):
    pid_file = tmp_path / "stage.pid"
    with pytest.raises(ChildError) as err:
        run_in_child(_job_that_hangs, str(pid_file), timeout_s=10)
    assert err.value.kind == "timeout"
    stage = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(stage) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(stage), "a timed-out job left its stage running"
