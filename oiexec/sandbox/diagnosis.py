"""Turn a preflight into a decision: which backend, what it enforces, what is degraded and
how to fix it. Shared by `get_sandbox` and `interpreter sandbox doctor`."""

from __future__ import annotations

import functools
import operator
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import bwrap, profiles, reaper, seccomp
from oiexec.sandbox.limits import find_pids_cgroup
from oiexec.sandbox.preflight import Preflight
from oiexec.sandbox.privtmp import temp_roots

FIX_INSTALL_BWRAP = "install bubblewrap from your distribution (e.g. `sudo apt install bubblewrap`)"
FIX_APPARMOR = (
    "Ubuntu 24.04+: allow bwrap user namespaces with Ubuntu's own profile: "
    "`sudo apt install apparmor-profiles && sudo cp /usr/share/apparmor/extra-profiles/"
    "bwrap-userns-restrict /etc/apparmor.d/ && sudo apparmor_parser -r "
    "/etc/apparmor.d/bwrap-userns-restrict` (see sandbox_profiles/linux/apparmor/README.md)"
)
FIX_SYSCTL_APPARMOR = (
    "or, less safely, lift the restriction for everyone: "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
)
FIX_SYSCTL_USERNS = "enable user namespaces: `sudo sysctl -w user.max_user_namespaces=15000`"
FIX_LANDLOCK = "enable Landlock (kernel >= 5.19 with `landlock` in the `lsm=` boot parameter)"
FIX_EXTERNAL = (
    "if this already runs inside an isolated, disposable container or VM, say so explicitly "
    "with `--sandbox danger-full-access`"
)
FIX_PROC = (
    "host /proc is masked (Docker): run the container with `--security-opt systempaths=unconfined`"
)
FIX_NETNS = "the loopback device could not be set up in a network namespace (AppArmor?)"


@dataclass
class Decision:
    backend: str  # bwrap | landlock | seatbelt | none (danger-full-access) | unavailable
    policy: SandboxPolicy
    preflight: Preflight
    degraded: list[str] = field(default_factory=list)
    remediation: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def usable(self) -> bool:
        return self.backend != "unavailable"

    def enforced(self) -> dict[str, bool]:
        """What the chosen backend really enforces for this policy: a flat dict of bools
        (other parts add their own keys), each claim true only where it is tested to hold."""
        backend = self.backend
        sandboxed = backend in ("bwrap", "landlock", "seatbelt")
        features = self.preflight.bwrap if backend == "bwrap" else None
        netns = bool(features and features.netns)
        proc = bool(features and features.proc)
        off = sandboxed and self.policy.network_disabled
        closed = _refused_families(self.policy, backend) if off and backend != "seatbelt" else {}
        # Seatbelt's deny-default profile refuses every socket when the network is off.
        unix = off and (backend == "seatbelt" or closed.get(_AF_UNIX, False))
        inet = off and (backend == "seatbelt" or netns or closed.get(_AF_INET, False))
        linux = backend in ("bwrap", "landlock")
        return {
            "fs_write": sandboxed,
            "protected_paths": backend in ("bwrap", "seatbelt"),
            "protected_paths_tripwire": backend == "landlock",
            # TCP/UDP *and* Unix sockets to anything outside the command are closed.
            "network": inet and unix,
            "unix_sockets": unix,
            # Pathname sockets: docker, containerd, podman, D-Bus, systemd (policy.toml:
            # masked_sockets); with the network off, Unix sockets are refused outright, which
            # covers them too. Abstract sockets have no path to mask: the next key.
            "host_sockets_masked": backend == "bwrap" or unix,
            # Abstract Unix sockets of the host (X11 `@/tmp/.X11-unix/X0`, D-Bus, container
            # runtime shims) cannot be connected to.
            "abstract_sockets_scoped": unix or _abstract_closed(self, netns and off),
            # No write to /proc/sys and the like: a root runner's uid 0 passes sysctl checks.
            "sysctl_readonly": sandboxed,
            # Only /dev/null, /dev/zero, ttys and the like: no disks, /dev/kmsg, /dev/kvm.
            "device_nodes": sandboxed,
            "capabilities_dropped": linux or (sandboxed and os.geteuid() != 0),
            # Host processes neither visible nor signalable.
            "pid_isolation": backend == "bwrap" and proc,
            "own_loopback": backend == "bwrap" and netns,
            # /tmp and $TMPDIR are private to the run: nothing written (or mounted) there
            # shows up in the host's /tmp. Landlock cannot remap paths.
            "private_tmp": backend == "bwrap" and bool(temp_roots(self.policy)),
        }

    def guarantees_missing(self) -> list[str]:
        """One precise sentence per guarantee of the mode this backend does not give."""
        return _missing(self, self.enforced())

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "mode": self.policy.mode,
            "network": "off" if self.policy.network_disabled else "on",
            "require": self.policy.require,
            "enforced": self.enforced(),
            "guarantees_missing": self.guarantees_missing(),
            "degraded": self.degraded,
            "remediation": self.remediation,
            "reason": self.reason,
            "preflight": self.preflight.as_dict(),
        }


def _missing(decision: Decision, on: dict[str, bool]) -> list[str]:
    backend, policy = decision.backend, decision.policy
    if backend == "none":
        return ["no sandbox (danger-full-access): commands have all of the runner's access"]
    if backend == "unavailable":
        return []  # nothing runs
    writes = policy.mode == "workspace-write"
    out: list[str] = []
    if writes and not on["protected_paths"]:
        out.append(
            "protected names (.git, .openinterpreter, .agents, .codex) are writable while a "
            "command runs; a tripwire restores them after it"
        )
    if policy.network_disabled:
        if not on["unix_sockets"]:
            scoped = on["own_loopback"] or on["abstract_sockets_scoped"]
            where = "pathname" if scoped else "abstract and pathname"
            out.append(
                f"Unix sockets are not refused: {where} sockets of host services are reachable"
            )
        if not on["own_loopback"]:
            out.append("no network namespace: TCP/UDP are refused by the seccomp filter alone")
    else:
        if not on["host_sockets_masked"]:
            out.append(
                "network on: host sockets (docker, containerd, D-Bus, systemd) are not masked"
            )
        if backend in ("bwrap", "landlock") and not on["abstract_sockets_scoped"]:
            out.append("network on: " + abstract_socket_gap(decision))
    if not on["pid_isolation"]:
        pre = decision.preflight
        if backend == "bwrap":
            out.append("/proc is the host's (read-only): host processes are visible, unsignalable")
        elif backend == "landlock" and pre.landlock_abi < 6:
            out.append("no PID namespace: host processes are visible and can be signalled")
        else:
            out.append("no PID namespace: host processes are visible (not signalable)")
    if writes and not on["private_tmp"] and temp_roots(policy):
        out.append("/tmp and $TMPDIR are the host's, shared with other programs")
    for key, sentence in (
        ("sysctl_readonly", "kernel settings under /proc/sys may be writable"),
        ("device_nodes", "host device nodes beyond /dev/null and ttys may be writable"),
        ("capabilities_dropped", "commands keep the runner's capabilities"),
    ):
        if not on[key]:
            out.append(sentence)
    return out


_AF_UNIX, _AF_INET = 1, 2


def _abstract_closed(decision: Decision, own_netns: bool) -> bool:
    """Whether host abstract sockets are out of reach (the seccomp filter aside): a network
    namespace of the command's own, or Landlock's abstract-socket scope (ABI >= 6; under
    bwrap applied to bwrap itself, see `AbstractSocketScope`)."""
    pre = decision.preflight
    if decision.backend == "seatbelt":
        return True  # macOS has no abstract socket namespace
    if decision.backend == "landlock":
        return pre.landlock_abi >= bwrap.SCOPE_ABI
    if decision.backend != "bwrap" or pre.bwrap is None:
        return False
    return own_netns or bwrap.abstract_scope_gap(pre.bwrap.path, pre.landlock_abi) is None


def abstract_socket_gap(decision: Decision) -> str:
    """The sentence saying that host abstract sockets are reachable, and why."""
    pre = decision.preflight
    path = pre.bwrap.path if decision.backend == "bwrap" and pre.bwrap is not None else ""
    why = bwrap.abstract_scope_gap(path, pre.landlock_abi) or "not scoped"
    return (
        "abstract Unix sockets of the host (X11 @/tmp/.X11-unix/X0, D-Bus, container runtime "
        f"shims) are reachable: {why}; nothing else closes them while commands share the "
        "host's network namespace, except turning the network off"
    )


@functools.lru_cache(maxsize=8)
def _families_closed(program: bytes, arch: str) -> dict[int, bool]:
    table = profiles.load("linux/seccomp.toml")["arch"][arch]
    nr, audit = int(table["syscalls"]["socket"]), int(table["audit_arch"])
    out: dict[int, bool] = {}
    for family in (_AF_UNIX, _AF_INET):
        # socket(family, SOCK_STREAM, 0) as struct seccomp_data.
        data = struct.pack("<iIQ6Q", nr, audit, 0, family, 1, 0, 0, 0, 0)
        verdict = run_bpf(program, data)
        out[family] = verdict is not None and verdict & 0xFFFF0000 not in _OPEN_ACTIONS
    return out


def _refused_families(policy: SandboxPolicy, backend: str) -> dict[int, bool]:
    """Which socket families the backend's real seccomp filter refuses, found by running the
    filter on `socket(family, ...)`: the claim follows the filter, whatever it becomes."""
    try:
        arch = seccomp.native_arch()
        return _families_closed(seccomp.filter_for(policy, backend=backend), arch)
    except (seccomp.UnsupportedArch, KeyError, ValueError):
        return {}


_OPEN_ACTIONS = (0x7FFF0000, 0x7FFC0000)  # SECCOMP_RET_ALLOW, SECCOMP_RET_LOG


def run_bpf(program: bytes, data: bytes) -> int | None:
    """Run a classic-BPF seccomp program on `data`; its return value, or None for an
    instruction this small interpreter does not know (then nothing is claimed)."""
    insns: list[tuple[int, int, int, int]] = [
        struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)
    ]
    a = x = 0
    pc = 0
    mask = 0xFFFFFFFF
    alu: dict[int, Callable[[int, int], int]] = {
        0x00: operator.add,
        0x10: operator.sub,
        0x20: operator.mul,
        0x40: operator.or_,
        0x50: operator.and_,
        0x60: lambda p, q: p << (q & 31),
        0x70: lambda p, q: p >> (q & 31),
        0xA0: operator.xor,
    }
    jumps: dict[int, Callable[[int, int], bool]] = {
        0x10: operator.eq,
        0x20: operator.gt,
        0x30: operator.ge,
        0x40: lambda p, q: bool(p & q),
    }
    while 0 <= pc < len(insns):
        code, jt, jf, k = insns[pc]
        cls, op, src = code & 0x07, code & 0xF0, x if code & 0x08 else k
        pc += 1
        if code == 0x20 and k + 4 <= len(data):  # LD W ABS
            a = int(struct.unpack_from("<I", data, k)[0])
        elif code == 0x00:  # LD IMM
            a = k
        elif cls == 0x04 and op in alu:
            a = alu[op](a, src) & mask
        elif code == 0x05:  # JA
            pc += k
        elif cls == 0x05 and op in jumps:
            pc += jt if jumps[op](a, src) else jf
        elif code == 0x06:  # RET K
            return k
        elif code == 0x16:  # RET A
            return a
        elif code == 0x07:  # TAX
            x = a
        elif code == 0x87:  # TXA
            a = x
        else:
            return None
    return None


def _userns_fixes(pre: Preflight) -> list[str]:
    fixes: list[str] = []
    if pre.bwrap_path is None:
        fixes.append(FIX_INSTALL_BWRAP)
    if pre.context.get("apparmor_restrict_unprivileged_userns") == "1":
        fixes += [FIX_APPARMOR, FIX_SYSCTL_APPARMOR]
    if pre.context.get("max_user_namespaces") == "0":
        fixes.append(FIX_SYSCTL_USERNS)
    if pre.bwrap_path is not None and not fixes:
        fixes.append(FIX_APPARMOR)
    return fixes


def decide(policy: SandboxPolicy, pre: Preflight) -> Decision:
    if policy.mode == "danger-full-access":
        return Decision("none", policy, pre, reason="danger-full-access: no sandbox requested")
    if pre.platform == "darwin":
        if pre.seatbelt:
            return Decision("seatbelt", policy, pre, reason="macOS Seatbelt (sandbox-exec)")
        return Decision(
            "unavailable",
            policy,
            pre,
            reason="/usr/bin/sandbox-exec is missing",
            remediation=[FIX_EXTERNAL],
        )
    if pre.platform != "linux":
        return Decision(
            "unavailable",
            policy,
            pre,
            reason=f"no OS sandbox is implemented for {pre.platform} yet",
            remediation=[FIX_EXTERNAL],
        )
    if pre.arch is None:
        return Decision(
            "unavailable",
            policy,
            pre,
            reason=pre.bwrap_error or "unsupported architecture",
            remediation=[FIX_EXTERNAL],
        )
    if pre.bwrap is not None and policy.backend in ("auto", "bwrap"):
        return _bwrap_decision(policy, pre)
    if pre.landlock_abi >= 2 and policy.backend in ("auto", "landlock"):
        return _landlock_decision(policy, pre)
    reasons = [f"bwrap: {pre.bwrap_error}" if pre.bwrap is None else "bwrap: not selected"]
    reasons.append(
        f"Landlock: {pre.landlock_error}" if pre.landlock_error else "Landlock: not selected"
    )
    fixes = _userns_fixes(pre) if pre.bwrap is None else []
    if pre.landlock_abi < 2:
        fixes.append(FIX_LANDLOCK)
    fixes.append(FIX_EXTERNAL)
    return Decision("unavailable", policy, pre, reason="; ".join(reasons), remediation=fixes)


def _bwrap_decision(policy: SandboxPolicy, pre: Preflight) -> Decision:
    assert pre.bwrap is not None
    degraded: list[str] = []
    fixes: list[str] = []
    if not pre.bwrap.proc:
        degraded.append("/proc could not be mounted: host processes are visible (not signalable)")
        fixes.append(FIX_PROC)
    if not pre.bwrap.netns and policy.network_disabled:
        if _refused_families(policy, "bwrap").get(_AF_UNIX, False):
            degraded.append(
                "no network namespace: TCP/UDP and Unix sockets are refused by the seccomp "
                "filter alone (no private loopback)"
            )
        else:
            degraded.append(
                "no network namespace: TCP/UDP are refused by the seccomp filter alone; "
                "abstract and pathname Unix sockets of the host are reachable"
            )
        fixes += [FIX_NETNS, FIX_APPARMOR]
    if not pre.bwrap.keeps("--disable-userns"):
        degraded.append("bwrap cannot forbid nested user namespaces (old bubblewrap?)")
    degraded += process_limit_gap(policy)
    return Decision(
        "bwrap",
        policy,
        pre,
        degraded=degraded,
        remediation=fixes,
        reason=f"bubblewrap {pre.bwrap.path} works (user namespaces available)",
    )


def process_limit_gap(policy: SandboxPolicy) -> list[str]:
    """RLIMIT_NPROC does not bind root (not even inside bwrap's user namespace), so a root
    runner's process limit needs a pids cgroup (`limits.py`); say so when there is none."""
    limit = policy.limits.max_processes
    if limit is None or os.geteuid() != 0 or find_pids_cgroup() is not None:
        return []
    return [
        f"max_processes ({limit}) is not enforced: RLIMIT_NPROC does not apply to root and no "
        "writable pids cgroup was found"
    ]


#: What Landlock cannot guarantee, whatever the host (docs/sandbox.md, doctor).
LANDLOCK_HISTORY = (
    "git history is not protected: objects, refs and the index can be changed or deleted by a "
    "command and are not restored; a deleted or replaced .git is reported with the HEAD and "
    "branches it had"
)
LANDLOCK_ROOT_METADATA = (
    "root runner: the mode bits, timestamps and user.* xattrs of root-owned files outside the "
    "writable roots can be changed (Landlock has no rule for them and a path-blind filter "
    "cannot tell where a file is; chown, set-id bits and device nodes are refused)"
)
LANDLOCK_ROOT_DISKS = "root runner: raw block devices (/dev/vda, ...) can be read"
LANDLOCK_SHARED = (
    "the user's other terminals (/dev/pts) can be written to (input injection is refused), "
    "and SysV IPC and POSIX message queues are the host's"
)


def landlock_gaps(policy: SandboxPolicy, abi: int) -> list[str]:
    """One sentence per guarantee the Landlock backend does not give here."""
    root = os.geteuid() == 0
    writes = policy.mode == "workspace-write"
    gaps = [
        "protected paths (.git, .openinterpreter, ...) are not locked, only restored after "
        "each command (and at the end of the run) by a tripwire",
        "no PID namespace: host processes are visible",
    ]
    if writes:
        gaps.append(LANDLOCK_HISTORY)
    if temp_roots(policy):
        gaps.append("/tmp is the host's shared /tmp, not private to the run")
    if abi < 6:
        gaps.append(
            f"Landlock ABI {abi} < 6: signals to host processes and abstract Unix sockets are "
            "not scoped"
        )
    # A root runner's per-command pids cgroup lists every process: no sentinel needed then.
    if not (root and find_pids_cgroup() is not None):
        gaps += reaper.degraded(abi)
    gaps += process_limit_gap(policy)
    if not policy.network_disabled:
        gaps.append(
            "network on: host Unix sockets (docker, D-Bus, ...) are reachable; Landlock "
            "cannot mask them"
        )
    if root and writes:
        gaps.append(LANDLOCK_ROOT_METADATA)
    if root:
        gaps.append(LANDLOCK_ROOT_DISKS)
    gaps.append(LANDLOCK_SHARED)
    return gaps


def _landlock_decision(policy: SandboxPolicy, pre: Preflight) -> Decision:
    degraded = landlock_gaps(policy, pre.landlock_abi)
    why = (
        'chosen with sandbox_backend = "landlock"'
        if policy.backend == "landlock"
        else f"bwrap cannot run: {pre.bwrap_error}"
    )
    fixes = _userns_fixes(pre) if pre.bwrap is None else []
    if policy.require == "full":
        return Decision(
            "unavailable",
            policy,
            pre,
            reason=f"only the degraded Landlock backend works ({why}) and sandbox_require = "
            '"full" refuses it',
            degraded=degraded,
            remediation=[
                *fixes,
                'or accept the degraded backend with sandbox_require = "any" (the default '
                'for a root runner is "full")',
                FIX_EXTERNAL,
            ],
        )
    return Decision(
        "landlock",
        policy,
        pre,
        degraded=degraded,
        remediation=fixes,
        reason=f"Landlock ABI {pre.landlock_abi} (degraded; {why})",
    )
