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
