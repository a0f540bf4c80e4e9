"""Turn a preflight into a decision: which backend, what it enforces, what is degraded and
how to fix it. Shared by `get_sandbox` and `interpreter sandbox doctor`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oiexec.sandbox.base import SandboxPolicy
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
        full = self.backend in ("bwrap", "seatbelt")
        sandboxed = self.backend in ("bwrap", "landlock", "seatbelt")
        netns = bool(self.preflight.bwrap and self.preflight.bwrap.netns)
        return {
            "fs_write": sandboxed,
            "protected_paths": full,
            "protected_paths_tripwire": self.backend == "landlock",
            "network": sandboxed and self.policy.network_disabled,
            "pid_isolation": self.backend == "bwrap",
            "own_loopback": self.backend == "bwrap" and netns,
            # /tmp and $TMPDIR are private to the run: nothing written (or mounted) there
            # shows up in the host's /tmp. Landlock cannot remap paths.
            "private_tmp": self.backend == "bwrap" and bool(temp_roots(self.policy)),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "mode": self.policy.mode,
            "network": "off" if self.policy.network_disabled else "on",
            "require": self.policy.require,
            "enforced": self.enforced(),
            "degraded": self.degraded,
            "remediation": self.remediation,
            "reason": self.reason,
            "preflight": self.preflight.as_dict(),
        }


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
        degraded.append("no network namespace: network is kept off by the seccomp filter alone")
        fixes += [FIX_NETNS, FIX_APPARMOR]
    if not pre.bwrap.keeps("--disable-userns"):
        degraded.append("bwrap cannot forbid nested user namespaces (old bubblewrap?)")
    return Decision(
        "bwrap",
        policy,
        pre,
        degraded=degraded,
        remediation=fixes,
        reason=f"bubblewrap {pre.bwrap.path} works (user namespaces available)",
    )


def _landlock_decision(policy: SandboxPolicy, pre: Preflight) -> Decision:
    degraded = [
        "protected paths (.git, .openinterpreter, ...) are not locked, only restored after "
        "each command by a tripwire",
        "no PID namespace: host processes are visible",
    ]
    if temp_roots(policy):
        degraded.append("/tmp is the host's shared /tmp, not private to the run")
    if pre.landlock_abi < 6:
        degraded.append(
            f"Landlock ABI {pre.landlock_abi} < 6: signals to host processes and abstract "
            "Unix sockets are not scoped"
        )
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
