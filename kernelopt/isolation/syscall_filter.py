"""A seccomp filter for sandboxed children: no new user namespaces, and a few kernel interfaces no stage uses.

A sandboxed child runs as an unprivileged uid with no capabilities, but Linux lets any
process create a user namespace and be root inside it: from there the kernel's
namespace-only code paths (mounting filesystems of its own, netfilter, ...) are open to it,
the source of most container escapes of the last years. bubblewrap's `--disable-userns`
works only where bwrap itself made the user namespace (an unprivileged service), not where
the service is root and drops the uid with `setpriv`; a seccomp filter works in both, and
with `unshare` too. Flatpak's filter is the model:

- `unshare` and `clone` with `CLONE_NEWUSER` and `setns` fail with EPERM;
- `clone3` fails with ENOSYS (its flags sit behind a pointer a filter cannot read): glibc
  then falls back to `clone` for threads and `posix_spawn`, which the filter can check;
- the kernel keyring (`keyctl`, `add_key`, `request_key`: not namespaced), `bpf`,
  `userfaultfd` and `io_uring` (frequent kernel exploit primitives) fail with EPERM;
- a system call of another ABI (i386's `int 0x80` or x32 on x86-64) fails with EPERM, so the
  numbers above cannot be dodged through a second syscall table.

Everything else is allowed: CUDA, Triton's compiler, Nsight Compute and PyTorch need none of
the refused calls. The program is a dozen classic-BPF instructions, built here for the
machine's architecture and installed by the child itself (`install()`, called by
isolation.entry before anything submitted is imported); every thread and process it starts
inherits it, and `no_new_privs` keeps it across `execve`.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

# linux/filter.h, linux/bpf_common.h
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06 | 0x00  # BPF_RET | BPF_K
# linux/seccomp.h
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # arg0's low 32 bits (little-endian machines below)
CLONE_NEWUSER = 0x10000000


@dataclass(frozen=True)
class _Abi:
    audit_arch: int
    unshare: int
    clone: int
    clone3: int
    setns: int
    refused: tuple[int, ...]  # keyctl, add_key, request_key, bpf, userfaultfd, io_uring_setup/enter/register
    x32_bit: int | None = None  # syscalls numbered from here are another ABI on the same arch value


_ABIS = {
    "x86_64": _Abi(audit_arch=0xC000003E, unshare=272, clone=56, clone3=435, setns=308,
                   refused=(250, 248, 249, 321, 323, 425, 426, 427), x32_bit=0x40000000),
    "aarch64": _Abi(audit_arch=0xC00000B7, unshare=97, clone=220, clone3=435, setns=268,
                    refused=(219, 217, 218, 280, 282, 425, 426, 427)),
}


def unsupported_reason(machine: str | None = None) -> str | None:
    """Why this machine gets no filter (None: it does)."""
    machine = machine or platform.machine()
    if machine not in _ABIS:
        return f"no seccomp filter written for the {machine} architecture"
    return None


def program(machine: str | None = None) -> bytes:
    """The filter as `struct sock_filter[]` bytes for `machine` (default: this one)."""
    abi = _ABIS[machine or platform.machine()]
    eperm, enosys = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.ENOSYS
    # (label, code, k, label if true, label if false): labels resolved to relative forward jumps below
    steps: list[tuple[str, int, int, str | None, str | None]] = [
        ("arch", _LD_W_ABS, _OFF_ARCH, None, None),
        ("", _JEQ, abi.audit_arch, None, "eperm"),
        ("", _LD_W_ABS, _OFF_NR, None, None),
    ]
    if abi.x32_bit is not None:
        steps.append(("", _JGE, abi.x32_bit, "eperm", None))
    steps += [("", _JEQ, abi.clone3, "enosys", None),
              ("", _JEQ, abi.unshare, "flags", None),
              ("", _JEQ, abi.clone, "flags", None),
              ("", _JEQ, abi.setns, "eperm", None)]
    steps += [("", _JEQ, nr, "eperm", None) for nr in abi.refused]
    steps += [("", _RET, _RET_ALLOW, None, None),
              ("flags", _LD_W_ABS, _OFF_ARG0, None, None),
              ("", _JSET, CLONE_NEWUSER, "eperm", "allow"),
              ("eperm", _RET, eperm, None, None),
              ("enosys", _RET, enosys, None, None),
              ("allow", _RET, _RET_ALLOW, None, None)]  # classic BPF jumps forward only
    at = {label: i for i, (label, *_rest) in enumerate(steps) if label}
    out = []
    for i, (_label, code, k, if_true, if_false) in enumerate(steps):
        jt = at[if_true] - i - 1 if if_true else 0
        jf = at[if_false] - i - 1 if if_false else 0
        out.append(struct.pack("=HBBI", code, jt, jf, k))
    return b"".join(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Install the filter on this process (and everything it starts). Raises OSError where the kernel refuses."""
    code = program()
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {errno.errorcode.get(err, err)}")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {errno.errorcode.get(err, err)}")
