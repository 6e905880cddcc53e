"""The sandbox's seccomp filter (isolation/syscall_filter.py), as a program and installed in a process."""
from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

from kernelopt.isolation import syscall_filter
from kernelopt.isolation.sandbox import PROJECT_ROOT


def _decode(code: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_program_jumps_forward_only_and_ends_in_a_return(machine):
    """Classic BPF: every jump lands on a later instruction inside the program, and the last one returns."""
    steps = _decode(syscall_filter.program(machine))
    for i, (code, jt, jf, _k) in enumerate(steps):
        if code & 0x07 == 0x05:  # BPF_JMP
            assert i + 1 + max(jt, jf) < len(steps)
    assert steps[-1][0] == 0x06 and len(steps) < 40


def test_an_architecture_without_a_table_gets_no_filter_and_says_why():
    assert syscall_filter.unsupported_reason("riscv64") == "no seccomp filter written for the riscv64 architecture"
    assert syscall_filter.unsupported_reason("x86_64") is None


# What the child reports: each refused call's errno, and that threads, processes and torch still work.
_CHILD = """
import ctypes, json, os, subprocess, sys, threading
sys.path.insert(0, sys.argv[1])
from kernelopt.isolation import syscall_filter
syscall_filter.install()
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(r):
    return "ok" if r == 0 else os.strerror(ctypes.get_errno())
out = {"unshare(NEWUSER)": errno_of(libc.unshare(syscall_filter.CLONE_NEWUSER)),
       "keyctl": errno_of(libc.syscall(250, 0, 0, 0, 0, 0)),
       "bpf": errno_of(libc.syscall(321, 0, 0, 0)),
       "userfaultfd": errno_of(libc.syscall(323, 0)),
       "io_uring_setup": errno_of(libc.syscall(425, 1, 0))}
t = threading.Thread(target=lambda: None); t.start(); t.join()
out["process"] = subprocess.run(["echo", "ran"], capture_output=True, text=True).stdout.strip()
import torch
out["torch"] = str(int(torch.arange(4).sum()))
print(json.dumps(out))
"""


@pytest.mark.skipif(syscall_filter.unsupported_reason() is not None or sys.platform != "linux", reason="x86_64/aarch64 Linux")
def test_installed_it_refuses_what_it_lists_and_lets_the_stages_work():
    p = subprocess.run([sys.executable, "-c", _CHILD, str(PROJECT_ROOT)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    refused = "Operation not permitted"
    if syscall_filter.platform.machine() == "x86_64":
        assert got == {"unshare(NEWUSER)": refused, "keyctl": refused, "bpf": refused, "userfaultfd": refused,
                       "io_uring_setup": refused, "process": "ran", "torch": "6"}, got
    else:
        assert got["unshare(NEWUSER)"] == refused and got["process"] == "ran", got
