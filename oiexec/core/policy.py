"""Sandbox policy and the command a backend prepares: the types every layer passes around.

A backend turns (argv, cwd, env) into a `PreparedCommand` that the process layer spawns. The
process layer knows nothing about namespaces or Landlock; backends know nothing about PTYs,
output caps or timeouts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
#: `sandbox_backend`: "auto" takes bwrap when it works, else degraded Landlock.
BackendChoice = Literal["auto", "bwrap", "landlock"]


@dataclass(frozen=True)
class SandboxLimits:
    """Per-command resource limits (None: not limited). Enforced by every Linux backend."""

    #: Processes (and threads) a command may have at once: a fork bomb stops here.
    max_processes: int | None = 1024
    #: Largest file a command may write, in bytes (RLIMIT_FSIZE): a runaway writer stops here.
    max_file_size: int | None = 1024 * 1024 * 1024
    #: CPU seconds per process (RLIMIT_CPU); wall time is the tool timeout's business.
    max_cpu_seconds: int | None = 3600

    @classmethod
    def from_config(
        cls, max_processes: int, max_file_size_mb: int, max_cpu_seconds: int
    ) -> SandboxLimits:
        """From `[sandbox_limits]` (or the matching flags): sizes in MiB, 0 for unlimited."""
        return cls(
            max_processes=max_processes or None,
            max_file_size=max_file_size_mb * 1024 * 1024 or None,
            max_cpu_seconds=max_cpu_seconds or None,
        )


RequireChoice = Literal["auto", "full", "any"]


def resolve_require(choice: RequireChoice) -> Literal["full", "any"]:
    """`sandbox_require = "auto"`: a root runner (the usual CI container) refuses the degraded
    backend, since there a sandbox gap is a gap to host root; anyone else accepts it."""
    if choice != "auto":
        return choice
    return "full" if os.geteuid() == 0 else "any"


@dataclass(frozen=True)
class SandboxPolicy:
    """What commands may do. Paths are absolute; the backend resolves symlinks itself."""

    mode: SandboxMode
    cwd: Path
    #: Extra writable roots from `--add-dir` and `[sandbox_workspace_write] writable_roots`.
    extra_roots: tuple[Path, ...] = ()
    network_access: bool = False
    exclude_tmpdir_env_var: bool = False
    exclude_slash_tmp: bool = False
    #: "full" refuses degraded backends; "any" accepts them with a warning. (The config's
    #: "auto" is resolved before this: "full" for a root runner, "any" otherwise.)
    require: Literal["full", "any"] = "any"
    #: Which Linux backend to use; "auto" picks bwrap when it works, else Landlock.
    backend: BackendChoice = "auto"
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    #: The permission profile (`default_permissions`) these rules come from, if any.
    profile: str | None = None
    #: Whether the working directory is a writable root (a permission profile may leave it
    #: read-only and name other roots).
    cwd_writable: bool = True
    #: Paths kept read-only inside writable roots (a profile's `read` rules).
    read_only_paths: tuple[Path, ...] = ()
    #: Paths commands must not read or write at all (a profile's `deny` rules); a backend
    #: that cannot hide them is refused before the run (oiexec.runner.prepare).
    deny_paths: tuple[Path, ...] = ()
    #: `[sandbox_workspace_write] allowed_domains`: with the network on, the only hosts
    #: commands reach, through the runner's proxy (oiexec.sandbox.netproxy).
    allowed_domains: tuple[str, ...] = ()

    @property
    def network_allowlist(self) -> bool:
        """Whether commands reach the network only through the allowlist proxy: in
        workspace-write with network access (off, nothing is reachable anyway; with no
        sandbox at all there is nothing to route through it)."""
        return bool(self.allowed_domains) and self.mode == "workspace-write" and self.network_access

    @property
    def network_disabled(self) -> bool:
        return self.mode != "danger-full-access" and not (
            self.mode == "workspace-write" and self.network_access
        )

    @property
    def hides_paths(self) -> bool:
        """Whether the policy has path rules beyond writable roots (profiles' read and deny)."""
        return bool(self.read_only_paths or self.deny_paths)

    def writable_roots(self) -> list[Path]:
        """Roots a command may write under (empty for read-only)."""
        if self.mode != "workspace-write":
            return []
        roots = [self.cwd] if self.cwd_writable else []
        roots += self.extra_roots
        if not self.exclude_slash_tmp:
            roots.append(Path("/tmp"))
        tmpdir = os.environ.get("TMPDIR")
        if tmpdir and not self.exclude_tmpdir_env_var:
            roots.append(Path(tmpdir))
        seen: list[Path] = []
        for root in roots:
            if root not in seen:
                seen.append(root)
        return seen

    def summary(self) -> str:
        """Human form for the stderr header, e.g. `workspace-write [workdir, /tmp, $TMPDIR]`."""
        rules = ""
        if self.profile is not None:
            counts = [f"profile {self.profile}"]
            if self.read_only_paths:
                counts.append(f"{len(self.read_only_paths)} read-only")
            if self.deny_paths:
                counts.append(f"{len(self.deny_paths)} denied")
            rules = f" ({', '.join(counts)})"
        if self.mode != "workspace-write":
            return self.mode + rules
        parts = ["workdir"] if self.cwd_writable else []
        parts += [str(p) for p in self.extra_roots]
        if not self.exclude_slash_tmp:
            parts.append("/tmp")
        if not self.exclude_tmpdir_env_var:
            parts.append("$TMPDIR")
        net = ", network on" if self.network_access else ""
        if self.network_allowlist:
            net = f", network: {', '.join(self.allowed_domains)} only"
        return f"workspace-write [{', '.join(parts)}]{net}{rules}"


@dataclass
class PreparedCommand:
    """A command ready to spawn, plus what must run after it exits.

    `after` returns notes for the model (e.g. a tripwire that restored `.git/hooks`); it is
    called exactly once, whatever the exit status.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    preexec_fn: Callable[[], None] | None = None
    after: Callable[[], list[str]] = field(default=lambda: [])
    #: Exit status a launcher uses for "could not set up the sandbox" (not the command's).
    setup_failure_exit_code: int | None = None


#: Sandbox modes from tightest to loosest.
MODE_ORDER: dict[str, int] = {mode: rank for rank, mode in enumerate(SANDBOX_MODES)}


def loosenings(ceiling: SandboxPolicy, policy: SandboxPolicy) -> list[str]:
    """How `policy` lets commands do more than `ceiling` does, one phrase each (empty when it
    is as tight or tighter): a looser mode, network access, a writable root or a path the
    ceiling keeps read-only or hidden, a degraded backend, a higher resource limit."""
    if MODE_ORDER[policy.mode] > MODE_ORDER[ceiling.mode]:
        return [f"sandbox mode {policy.mode} is looser than {ceiling.mode}"]
    if policy.mode == "danger-full-access":
        return []  # both unconfined: nothing below applies
    found: list[str] = []
    if ceiling.network_disabled and not policy.network_disabled:
        found.append("network access is on, and off in the ceiling")
    elif ceiling.network_allowlist and not policy.network_disabled:
        wider = [d for d in policy.allowed_domains if d not in ceiling.allowed_domains]
        if not policy.network_allowlist:
            found.append("network access is unrestricted, and an allowlist in the ceiling")
        elif wider:
            found.append(f"network hosts {', '.join(wider)} are allowed, not in the ceiling")
    allowed = ceiling.writable_roots()
    for root in policy.writable_roots():
        if not any(root == top or root.is_relative_to(top) for top in allowed):
            found.append(f"{root} is writable, and not in the ceiling")
    for path in ceiling.read_only_paths:
        kept = any(path.is_relative_to(p) for p in (*policy.read_only_paths, *policy.deny_paths))
        writable = any(path.is_relative_to(root) for root in policy.writable_roots())
        if writable and not kept:
            found.append(f"{path} is writable, and read-only in the ceiling")
    for path in ceiling.deny_paths:
        if not any(path.is_relative_to(p) for p in policy.deny_paths):
            found.append(f"{path} is not denied, and denied in the ceiling")
    if ceiling.require == "full" and policy.require == "any":
        found.append("a degraded sandbox is accepted (sandbox_require), not in the ceiling")
    if policy.backend == "landlock" and ceiling.backend != "landlock":
        found.append("the Landlock backend is chosen (it confines less than bwrap)")
    for name in ("max_processes", "max_file_size", "max_cpu_seconds"):
        top, value = getattr(ceiling.limits, name), getattr(policy.limits, name)
        if top is not None and (value is None or value > top):
            found.append(f"sandbox limit {name} is {value or 'unlimited'}, above {top}")
    return found


class Sandbox(Protocol):
    """Confines one command. `prepare` raises `SandboxUnavailable` rather than ever
    running a command with less confinement than the policy asks for."""

    @property
    def backend(self) -> str: ...

    @property
    def policy(self) -> SandboxPolicy: ...

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None:
        """End of run: remove what the sandbox kept across commands (bwrap's private /tmp).
        Called once, after the last command; idempotent."""
        ...
