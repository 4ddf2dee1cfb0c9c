"""A seccomp filter that refuses Unix-domain sockets, for calls that get no network.

A network namespace stops TCP and abstract Unix sockets, but a socket file on disk (a Docker
daemon's, an SSH agent's, a database's) can still be connected to: a read-only mount does not stop
`connect()`. Without `socket(AF_UNIX, ...)` a process cannot make the end it would connect with.
`socketpair()` stays allowed: its two ends are already joined to each other and reach nothing else.
io_uring is refused too, since it can open sockets without the `socket` system call.

The filter is classic BPF, as bubblewrap's `--seccomp FD` takes it (what `seccomp_export_bpf`
writes): an array of `struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }`.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: load the 32-bit word at an offset of seccomp_data
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_AF_UNIX = 1
_X32_BIT = 0x40000000
# seccomp_data: int nr at 0, u32 arch at 4, u64 instruction_pointer at 8, u64 args[6] from 16.
_NR, _ARCH, _ARG0 = 0, 4, 16

# (audit arch, socket, io_uring_setup) per machine we know; elsewhere there is no filter.
_MACHINES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def unix_socket_filter() -> bytes | None:
    """The compiled filter for this machine, or None where we have no numbers for it."""
    numbers = _MACHINES.get(platform.machine())
    if numbers is None:
        return None
    arch, socket_nr, io_uring_nr = numbers
    deny_unix = _ERRNO | errno.EACCES
    deny_call = _ERRNO | errno.ENOSYS
    program = [
        _op(_LD_W_ABS, _ARCH),
        _op(_JEQ, arch, 0, 8),  # another ABI (32-bit calls on a 64-bit kernel): refuse -> [10]
        _op(_LD_W_ABS, _NR),
        _op(_JGE, _X32_BIT, 6, 0),  # the x32 ABI's numbers -> [10]
        _op(_JEQ, io_uring_nr, 5, 0),  # -> [10]
        _op(_JEQ, socket_nr, 0, 2),  # not socket() -> allow [8]
        _op(_LD_W_ABS, _ARG0),
        _op(_JEQ, _AF_UNIX, 1, 0),  # AF_UNIX -> [9]
        _op(_RET, _ALLOW),  # [8]
        _op(_RET, deny_unix),  # [9]
        _op(_RET, deny_call),  # [10]
    ]
    return b"".join(program)


def filter_fd(program: bytes) -> int:
    """A readable descriptor holding `program`, for bubblewrap to read once; the caller closes it."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: well within a pipe's buffer
    finally:
        os.close(write_end)
    return read_end
