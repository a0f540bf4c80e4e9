"""A small classic-BPF seccomp filter, compiled in Python from `linux/seccomp.toml`.

Default allow; foreign architectures are killed; io_uring is refused; with network off,
`socket`/`socketpair` work only for the allowed families (AF_UNIX). No libseccomp needed.
"""

from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass

from oiexec.sandbox import profiles

# BPF opcodes (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000

# Offsets in struct seccomp_data.
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16  # little-endian: low 32 bits of args[0]

_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


class UnsupportedArch(RuntimeError):
    pass


@dataclass(frozen=True)
class _Insn:
    code: int
    jt: int
    jf: int
    k: int

    def pack(self) -> bytes:
        return struct.pack("<HBBI", self.code, self.jt, self.jf, self.k)


def native_arch() -> str:
    machine = platform.machine().lower()
    if machine not in _MACHINES:
        raise UnsupportedArch(f"no seccomp filter for architecture {machine!r}")
    return _MACHINES[machine]


def build_filter(*, network_disabled: bool, arch: str | None = None) -> bytes:
    """The filter as raw `struct sock_filter` bytes (what bwrap `--seccomp FD` reads)."""
    data = profiles.load("linux/seccomp.toml")
    arch = arch or native_arch()
    if arch not in data["arch"]:
        raise UnsupportedArch(f"no seccomp filter for architecture {arch!r}")
    table = data["arch"][arch]
    numbers: dict[str, int] = table["syscalls"]
    families: dict[str, int] = data["families"]
    eperm = _RET_ERRNO | 1  # EPERM

    prog: list[_Insn] = [
        _Insn(_LD_W_ABS, 0, 0, _OFF_ARCH),
        _Insn(_JEQ_K, 1, 0, int(table["audit_arch"])),
        _Insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _Insn(_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if "x32_bit" in table:
        prog += [_Insn(_JGE_K, 0, 1, int(table["x32_bit"])), _Insn(_RET_K, 0, 0, eperm)]
    for name in data["deny_syscalls"]:
        prog += [_Insn(_JEQ_K, 0, 1, numbers[name]), _Insn(_RET_K, 0, 0, eperm)]

    if network_disabled:
        allowed = [families[f] for f in data["network_off_allowed_families"]]
        prog += _family_check(numbers, allowed_only=allowed, denied=[], eperm=eperm)
    else:
        denied = [families[f] for f in data["network_on_denied_families"]]
        prog += _family_check(numbers, allowed_only=None, denied=denied, eperm=eperm)
    prog.append(_Insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(insn.pack() for insn in prog)


def _family_check(
    numbers: dict[str, int], *, allowed_only: list[int] | None, denied: list[int], eperm: int
) -> list[_Insn]:
    """`socket`/`socketpair`: check args[0] (the family) against the lists."""
    if allowed_only is not None:
        body: list[_Insn] = []
        # Each allowed family jumps to ALLOW (the instruction after the EPERM return).
        for i, fam in enumerate(allowed_only):
            remaining = len(allowed_only) - i - 1
            body.append(_Insn(_JEQ_K, remaining + 1, 0, fam))
        body += [_Insn(_RET_K, 0, 0, eperm), _Insn(_RET_K, 0, 0, _RET_ALLOW)]
    else:
        body = []
        for fam in denied:
            body += [_Insn(_JEQ_K, 0, 1, fam), _Insn(_RET_K, 0, 0, eperm)]
        body.append(_Insn(_RET_K, 0, 0, _RET_ALLOW))
    # Layout: [nr==socket? -> body] [nr==socketpair? -> body] [skip body] body
    skip = len(body) + 1
    return [
        _Insn(_JEQ_K, 1, 0, numbers["socket"]),
        _Insn(_JEQ_K, 0, skip, numbers["socketpair"]),
        _Insn(_LD_W_ABS, 0, 0, _OFF_ARG0_LOW),
        *body,
    ]


def filter_fd(program: bytes) -> int:
    """A sealed-size memfd holding `program`, positioned at 0 (bwrap reads it to EOF)."""
    fd = os.memfd_create("oiexec-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
