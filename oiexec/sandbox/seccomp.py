"""A small classic-BPF seccomp filter, compiled in Python from `linux/seccomp.toml`.

Default allow. Foreign architectures are killed and x32 calls refused; a list of kernel
interfaces is refused outright (io_uring, bpf, keys, ptrace, modules, mounts...); a few calls
are refused by argument (TIOCSTI, device mknod, CLONE_NEWUSER, socket families); read-only
mode also refuses metadata changes. No libseccomp needed.

Layout, chosen so the kernel's per-syscall action cache (5.11+) still skips the filter for
every syscall that is simply allowed (it can, as long as a syscall's path never loads an
argument):

    arch check -> load nr -> x32 check
    per argument-checked syscall:  nr == N ? [load arg, (and mask), compare -> errno] : skip
    nr in ENOSYS list -> ENOSYS;  nr in EPERM list -> EPERM
    allow
"""

from __future__ import annotations

import os
import platform
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import profiles

# BPF opcodes (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x20
_ALU_AND_K = 0x54
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_EPERM = 1
_ENOSYS = 38

# Offsets in struct seccomp_data.
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARGS = 16  # args[i] at 16 + 8 * i; little-endian, so that is its low 32 bits

#: Jump offsets are 8 bits: a run of comparisons sharing one return stays below this.
_MAX_JUMP = 255

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


@dataclass(frozen=True)
class _Rule:
    """One argument check: refuse with EPERM when it matches (see seccomp.toml)."""

    arg: int
    mask: int | None
    kind: str  # "equals", "allow_only" or "any_bits"
    values: tuple[int, ...]


def native_arch() -> str:
    machine = platform.machine().lower()
    if machine not in _MACHINES:
        raise UnsupportedArch(f"no seccomp filter for architecture {machine!r}")
    return _MACHINES[machine]


def filter_for(policy: SandboxPolicy, *, backend: str) -> bytes:
    """The filter `backend` installs for `policy`.

    A root runner under Landlock runs commands as uid 0 in the host's user namespace (without
    capabilities, see privileges.py); there the chown family is refused in every mode. Under
    bwrap uid 0 is a namespaced uid on read-only mounts, so only read-only mode needs it.
    """
    return build_filter(
        network_disabled=policy.network_disabled,
        read_only=policy.mode == "read-only",
        deny_chown=backend == "landlock" and os.geteuid() == 0,
    )


def build_filter(
    *, network_disabled: bool, read_only: bool, deny_chown: bool, arch: str | None = None
) -> bytes:
    """The filter as raw `struct sock_filter` bytes (what bwrap `--seccomp FD` reads).

    `read_only` also refuses metadata changes (chmod, chown, utime, xattrs); `deny_chown`
    refuses the chown family alone.
    """
    data = profiles.load("linux/seccomp.toml")
    arch = arch or native_arch()
    if arch not in data["arch"]:
        raise UnsupportedArch(f"no seccomp filter for architecture {arch!r}")
    _check_names(data)
    table = data["arch"][arch]
    numbers: dict[str, int] = table["syscalls"]
    deny = data["deny"]
    eperm = _RET_ERRNO | _EPERM

    checked = _arg_rules(data, numbers, network="off" if network_disabled else "on")
    refused = list(deny["always"])
    if read_only:
        refused += deny["read_only"]
    if deny_chown:
        refused += deny["chown"]
    if network_disabled:
        refused += deny["network_off"]
    enosys = _present(deny["enosys"], numbers)
    refused_nrs = [nr for nr in _present(refused, numbers) if nr not in enosys]
    # A syscall refused outright needs no argument checks (and an argument block ends in
    # "allow", so a plain denial after it would never be reached).
    checked = {nr: r for nr, r in checked.items() if nr not in {*enosys, *refused_nrs}}

    prog: list[_Insn] = [
        _Insn(_LD_W_ABS, 0, 0, _OFF_ARCH),
        _Insn(_JEQ_K, 1, 0, int(table["audit_arch"])),
        _Insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _Insn(_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if "x32_bit" in table:
        prog += [_Insn(_JGE_K, 0, 1, int(table["x32_bit"])), _Insn(_RET_K, 0, 0, eperm)]
    for nr, rules in checked.items():
        prog += _arg_block(nr, rules, eperm)
    prog += _match_any(enosys, _RET_ERRNO | _ENOSYS)
    prog += _match_any(refused_nrs, eperm)
    prog.append(_Insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(insn.pack() for insn in prog)


def _check_names(data: dict[str, Any]) -> None:
    """Every syscall named in the lists exists on some architecture (catches typos, which
    would otherwise be skipped as "not on this architecture")."""
    known = {name for table in data["arch"].values() for name in table["syscalls"]}
    named = [name for names in data["deny"].values() for name in names]
    named += [name for rule in data["rules"] for name in rule["syscalls"]]
    unknown = sorted(set(named) - known)
    if unknown:
        raise ValueError(f"seccomp.toml: unknown syscalls {unknown}")


def _present(names: Iterable[str], numbers: dict[str, int]) -> list[int]:
    """Numbers of the names this architecture has, first occurrence only."""
    out: list[int] = []
    for name in names:
        nr = numbers.get(name)
        if nr is not None and nr not in out:
            out.append(nr)
    return out


def _arg_rules(
    data: dict[str, Any], numbers: dict[str, int], *, network: str
) -> dict[int, list[_Rule]]:
    """Syscall number -> its argument checks, in file order, for this network setting."""
    constants: dict[str, int] = data["constants"]

    def value(raw: int | str) -> int:
        return constants[raw] if isinstance(raw, str) else int(raw)

    checked: dict[int, list[_Rule]] = {}
    for entry in data["rules"]:
        if entry.get("network", network) != network:
            continue
        kinds = [k for k in ("equals", "allow_only", "any_bits") if k in entry]
        if len(kinds) != 1:
            raise ValueError(f"seccomp.toml: rule {entry.get('why')!r} needs one comparison")
        mask = entry.get("mask")
        rule = _Rule(
            arg=int(entry["arg"]),
            mask=None if mask is None else value(mask),
            kind=kinds[0],
            values=tuple(value(v) for v in entry[kinds[0]]),
        )
        for nr in _present(entry["syscalls"], numbers):
            checked.setdefault(nr, []).append(rule)
    return checked


def _arg_block(nr: int, rules: list[_Rule], ret: int) -> list[_Insn]:
    """`nr == N ? (each rule: load, mask, compare -> ret) then allow : skip the block`."""
    body: list[_Insn] = []
    for rule in rules:
        body.append(_Insn(_LD_W_ABS, 0, 0, _OFF_ARGS + 8 * rule.arg))
        if rule.mask is not None:
            body.append(_Insn(_ALU_AND_K, 0, 0, rule.mask))
        body += _compare(rule, ret)
    body.append(_Insn(_RET_K, 0, 0, _RET_ALLOW))
    if len(body) > _MAX_JUMP:
        raise ValueError(f"seccomp.toml: the checks of syscall {nr} are too long")
    return [_Insn(_JEQ_K, 0, len(body), nr), *body]


def _compare(rule: _Rule, ret: int) -> list[_Insn]:
    """Comparisons of the loaded value ending in `ret`; a non-match falls past `ret`."""
    n = len(rule.values)
    if rule.kind == "any_bits":
        mask = 0
        for bits in rule.values:
            mask |= bits
        return [_Insn(_JSET_K, 0, 1, mask), _Insn(_RET_K, 0, 0, ret)]
    if rule.kind == "allow_only":
        # A match jumps over `ret`; falling off the last comparison reaches it.
        jumps = [_Insn(_JEQ_K, n - i, 0, v) for i, v in enumerate(rule.values)]
        return [*jumps, _Insn(_RET_K, 0, 0, ret)]
    return _match_values(list(rule.values), ret)


def _match_any(nrs: list[int], ret: int) -> list[_Insn]:
    """`nr` in `nrs` -> `ret`, in runs short enough for 8-bit jumps."""
    out: list[_Insn] = []
    for start in range(0, len(nrs), _MAX_JUMP - 1):
        out += _match_values(nrs[start : start + _MAX_JUMP - 1], ret)
    return out


def _match_values(values: list[int], ret: int) -> list[_Insn]:
    """A run of `jeq` sharing one return: a match jumps to it, the last miss jumps past it."""
    if not values:
        return []
    n = len(values)
    jumps = [_Insn(_JEQ_K, n - 1 - i, 1 if i == n - 1 else 0, v) for i, v in enumerate(values)]
    return [*jumps, _Insn(_RET_K, 0, 0, ret)]


def filter_fd(program: bytes) -> int:
    """A sealed-size memfd holding `program`, positioned at 0 (bwrap reads it to EOF)."""
    fd = os.memfd_create("oiexec-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
