"""The full Linux backend: the system bubblewrap plus our seccomp filter.

Read-only root, a private /tmp and $TMPDIR per sandbox (privtmp.py), writable roots bound,
protected names re-bound read-only (missing ones get a run-owned guard dir with an empty
read-only tmpfs on it, guards.py), the host-wide parts of /proc read-only, well-known host
sockets masked, new user/pid/ipc(/net) namespaces, `--new-session`, `--die-with-parent`, all
capabilities dropped.
bwrap runs under a tiny `/bin/sh` wrapper that reads bwrap's `--json-status-fd` record and
exits 125 when the command never started, so a setup failure cannot be mistaken for the
command's own exit status 1.
"""

from __future__ import annotations

import contextlib
import glob
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.sandbox import fault_switches, landlock, profiles, seccomp
from oiexec.sandbox.guards import Guards, plan, restore_links
from oiexec.sandbox.limits import Limiter
from oiexec.sandbox.paths import PROTECTED_NAMES, protected_gitdirs, real_writable_roots
from oiexec.sandbox.privtmp import PrivateRoot, PrivateTmp
from oiexec.sandbox.profile_paths import ProfilePaths, pin_mounts, profile_mounts

if TYPE_CHECKING:
    from oiexec.sandbox.netgate import NetGate

SETUP_FAILURE_EXIT_CODE = 125

# $0 is bwrap; the status fd number and the limits' steps are substituted. Only shell
# builtins before bwrap starts and after it exits.
_WRAPPER = (
    "{steps}"
    '"$0" "$@"; rc=$?; ok=; '
    "while read -r line; do case $line in *exit-code*) ok=1;; esac; done </proc/self/fd/{fd}; "
    '[ -n "$ok" ] || exit {setup}; exit $rc'
)


@dataclass(frozen=True)
class BwrapFeatures:
    """What the preflight found working on this host."""

    path: str
    dropped: tuple[str, ...] = ()

    @property
    def proc(self) -> bool:
        return "--proc" not in self.dropped

    @property
    def netns(self) -> bool:
        return "--unshare-net" not in self.dropped

    def keeps(self, flag: str) -> bool:
        return flag not in self.dropped


def find_bwrap(writable_roots: list[Path]) -> str | None:
    """The first `bwrap` on PATH outside every writable root and untrusted root, else a fixed
    system path (the one rule for every program the runner starts, oiexec.core.programs)."""
    override = fault_switches.bwrap_override()
    if override:
        return override if os.access(override, os.X_OK) else None
    from oiexec.core import programs

    fallbacks: list[str] = profiles.load("linux/bwrap.toml")["fallback_paths"]
    return programs.find("bwrap", fallbacks=fallbacks, extra_untrusted=writable_roots)


@dataclass
class Mounts:
    """The mount flags of one command and what they rely on."""

    args: list[str] = field(default_factory=list)
    #: Guard dirs for missing protected names in bound roots (made on the host by `Guards`).
    created: list[Path] = field(default_factory=list)
    #: Symlinks on the way to protected names, with their targets, restored after a command.
    links: list[tuple[Path, str]] = field(default_factory=list)


def build_mounts(
    policy: SandboxPolicy,
    features: BwrapFeatures,
    private: Sequence[PrivateRoot] = (),
    guards: Guards | None = None,
) -> Mounts:
    """Mount flags, in order (later mounts win).

    Private temp roots come first, so a workspace under /tmp is bound on top of the private
    /tmp and its mount point is made inside the private dir, never in the host's /tmp.
    Without `guards` this only plans (unit tests): nothing is made or held on the host.
    """
    out = Mounts(["--ro-bind", "/", "/", "--dev", "/dev"])
    private_paths = [p.path for p in private]
    for temp in sorted((p for p in private if p.bind), key=lambda p: len(p.path.parts)):
        out.args += ["--bind", str(temp.host), str(temp.path)]
    for temp in private:
        for name in PROTECTED_NAMES:
            out.args += ["--ro-bind", str(temp.host / name), str(temp.path / name)]
    roots = sorted(
        (r for r in real_writable_roots(policy) if r not in private_paths),
        key=lambda p: len(p.parts),
    )
    for root in roots:
        out.args += ["--bind", str(root), str(root)]
    # Before every read-only bind, which must win over these writable self-binds.
    out.args += pin_mounts(policy, roots)
    for root in roots:
        for name in PROTECTED_NAMES:
            if guards is None:
                found = plan(root, name, roots, private_paths)
            else:
                found = guards.protect(root, name, roots, private_paths)
            out.links += found.links
            if found.mount is None:
                continue
            mount = str(found.mount)
            if found.guard:
                # An empty read-only tmpfs on the (held, run-owned) guard dir.
                out.args += ["--perms", "0555", "--tmpfs", mount, "--remount-ro", mount]
                out.created.append(found.mount)
            else:
                out.args += ["--ro-bind", mount, mount]
    for gitdir in protected_gitdirs(policy):
        out.args += ["--ro-bind", str(gitdir), str(gitdir)]
    locks = guards.lock_dir if guards is not None else None
    hidden = [*private_paths, Path("/dev")]  # private to the sandbox already
    if locks is not None and not any(locks.is_relative_to(p) for p in hidden):
        # Commands could otherwise flock other runs' guard locks (readable, as owner).
        out.args += ["--tmpfs", str(locks), "--remount-ro", str(locks)]
    for sock in masked_sockets(private_paths):
        out.args += ["--ro-bind", "/dev/null", sock]
    out.args += profile_mounts(policy)
    if features.proc:
        out.args += ["--proc", "/proc", *proc_readonly_args()]
    return out


def proc_readonly_args() -> list[str]:
    """Re-bind the host-wide parts of a fresh /proc read-only.

    Our uid 0 stays uid 0 in bwrap's user namespace, and sysctl writes check the euid, not
    capabilities: `kernel.core_pattern` would run any program as host root. bwrap covers
    /proc/sys itself only when it does not use a user namespace.
    """
    paths: list[str] = profiles.load("linux/bwrap.toml")["proc_readonly"]
    return [arg for path in paths for arg in ("--ro-bind-try", path, path)]


def masked_sockets(private: Sequence[Path] = ()) -> list[str]:
    """Existing well-known host sockets (`policy.toml: masked_sockets`), symlinks resolved.

    With the network on, a root runner could otherwise drive the container engine or the
    system bus (and through them the host); with it off the seccomp filter closes them too.
    """
    found: list[str] = []
    for pattern in map(str, profiles.policy_data().get("masked_sockets", [])):
        # What glob does for a plain path, without its machinery (most entries are plain).
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
        else:
            matches = [pattern] if os.path.lexists(pattern) else []
        for match in matches:
            real = os.path.realpath(match)
            if real in found or any(Path(real).is_relative_to(p) for p in private):
                continue  # a private root hides the host's socket already
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.stat(real).st_mode):
                    found.append(real)
    return found


def _command_args(
    policy: SandboxPolicy,
    features: BwrapFeatures,
    *,
    status_fd: int,
    seccomp_fd: int,
    private: Sequence[PrivateRoot],
    guards: Guards | None,
) -> tuple[list[str], Mounts]:
    data = profiles.load("linux/bwrap.toml")
    args = list(data["base_flags"])
    args += [f for f in data["optional_flags"] if features.keeps(f)]
    mounts = build_mounts(policy, features, private, guards)
    args += mounts.args
    if policy.network_disabled or policy.network_allowlist:
        # The allowlist's only way out is the proxy's socket (netgate.py), bound in later.
        args += [f for f in data["network_off_flags"] if features.keeps(f)]
    args += ["--json-status-fd", str(status_fd), "--seccomp", str(seccomp_fd)]
    args += ["--setenv", "OPENINTERPRETER_SANDBOX", policy.mode]
    if policy.network_disabled:
        args += ["--setenv", "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED", "1"]
    else:
        args += ["--unsetenv", "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"]
    return args, mounts


def bwrap_args(
    policy: SandboxPolicy,
    features: BwrapFeatures,
    *,
    status_fd: int,
    seccomp_fd: int,
    private: Sequence[PrivateRoot] = (),
) -> tuple[list[str], list[Path]]:
    """The bwrap flags for one command (planned only: nothing is made on the host)."""
    args, mounts = _command_args(
        policy, features, status_fd=status_fd, seccomp_fd=seccomp_fd, private=private, guards=None
    )
    return args, mounts.created


def wrap(bwrap_path: str, args: list[str], status_fd: int, steps: str = "") -> list[str]:
    """The wrapper command line; `steps` (shell builtins, `limits.shell_steps`) run first,
    and when one fails bwrap never starts and the wrapper exits with the setup failure."""
    first = f"{steps} || exit {SETUP_FAILURE_EXIT_CODE}; " if steps else ""
    script = _WRAPPER.format(steps=first, fd=status_fd, setup=SETUP_FAILURE_EXIT_CODE)
    return ["/bin/sh", "-c", script, bwrap_path, *args]


#: Landlock ABI that scopes abstract Unix sockets (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET).
SCOPE_ABI = 6


def abstract_scope_gap(bwrap_path: str, abi: int) -> str | None:
    """Why host abstract Unix sockets cannot be scoped under this bwrap (None: they are)."""
    if abi == 0:
        return "the kernel has no Landlock to scope them with"
    if abi < SCOPE_ABI:
        return f"Landlock ABI {abi} < {SCOPE_ABI} cannot scope them (Linux 6.12+ can)"
    try:
        setuid = bool(os.stat(bwrap_path).st_mode & stat.S_ISUID)
    except OSError:
        setuid = False
    if setuid and os.geteuid() != 0:
        # The scope needs no_new_privs, which would turn a setuid bwrap into a plain one.
        return f"{bwrap_path} is setuid, and no_new_privs would stop it working"
    return None


def _chain(first: Callable[[], None], then: Callable[[], None] | None) -> Callable[[], None]:
    if then is None:
        return first

    def both() -> None:
        first()
        then()

    return both


def sandbox_env(policy: SandboxPolicy, env: dict[str, str]) -> dict[str, str]:
    out = dict(env)
    out["OPENINTERPRETER_SANDBOX"] = policy.mode
    if policy.network_disabled:
        out["OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"] = "1"
    else:
        out.pop("OPENINTERPRETER_SANDBOX_NETWORK_DISABLED", None)
    return out


class BwrapSandbox:
    """Confines each command in a fresh bubblewrap sandbox."""

    backend = "bwrap"

    def __init__(
        self,
        policy: SandboxPolicy,
        features: BwrapFeatures,
        report: dict[str, Any],
        *,
        landlock_abi: int = 0,
    ):
        self._policy = policy
        self._features = features
        self._report = report
        self._program = seccomp.filter_for(policy, backend=self.backend)
        self._tmp = PrivateTmp()
        # Guard dirs belong to the run, not to one command (see guards.py).
        self._guards = Guards()
        # Resource limits go on the wrapper shell, so bwrap and the command inherit them; the
        # wrapper, bwrap and bwrap's PID 1 are three processes beside the command.
        # (A process limit it cannot enforce is in the report already: diagnosis.py.)
        self._limiter = Limiter(policy.limits, nproc_overhead=3, cgroup_overhead=3)
        self._profile_paths = ProfilePaths(policy)
        #: The network allowlist's proxy (imported only when there is an allowlist).
        self.net: NetGate | None = None
        if policy.network_allowlist:
            from oiexec.sandbox.netgate import NetGate

            self.net = NetGate(policy)
        # Not with the network off in a network namespace of the command's own, which has
        # its own abstract sockets, and a /proc of its own (the domain also keeps ptrace
        # from host processes, which only the host's /proc would show): there it closes
        # nothing more, and applying it takes a `preexec_fn`, i.e. a fork of the runner.
        self._scope: landlock.AbstractSocketScope | None = None
        isolated = (
            (policy.network_disabled or policy.network_allowlist)
            and features.netns
            and features.proc
        )
        if not isolated and abstract_scope_gap(features.path, landlock_abi) is None:
            self._scope = landlock.AbstractSocketScope(landlock_abi)

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        status_fd = os.memfd_create("oiexec-bwrap-status", os.MFD_CLOEXEC)
        seccomp_fd = seccomp.filter_fd(self._program)
        try:
            self._profile_paths.check()
            args, mounts = _command_args(
                self._policy,
                self._features,
                status_fd=status_fd,
                seccomp_fd=seccomp_fd,
                private=self._tmp.roots(self._policy),
                guards=self._guards,
            )
        except BaseException:
            for fd in (status_fd, seccomp_fd):
                os.close(fd)
            raise
        real_cwd = os.path.realpath(cwd)
        net = self.net
        if net is not None:
            try:
                args += net.mount_args()
            except BaseException:
                for fd in (status_fd, seccomp_fd):
                    os.close(fd)
                raise
            argv = net.wrap(argv)
        args += ["--chdir", real_cwd, "--", *argv]
        limits = self._limiter.prepare()
        # The limits go to the wrapper as shell builtins where they can, so that nothing has
        # to run in the child before exec and the runner can vfork; else `preexec_fn`.
        steps = limits.shell_steps() if self._scope is None else None
        preexec = None if steps is not None else _chain(limits.apply, self._scope)

        def after() -> list[str]:
            for fd in (status_fd, seccomp_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
            # Guards stay until close(); only links on the way to a protected name can have
            # been swapped by the command (they cannot be mounted on).
            notes = [*limits.release(kill=False), *restore_links(mounts.links)]
            return notes + (net.flush() if net is not None else [])

        return PreparedCommand(
            argv=wrap(self._features.path, args, status_fd, steps or ""),
            env=sandbox_env(self._policy, env),
            cwd=cwd,
            pass_fds=(status_fd, seccomp_fd),
            # The scope last: limits join a cgroup through a file opened in the parent.
            preexec_fn=preexec,
            after=after,
            setup_failure_exit_code=SETUP_FAILURE_EXIT_CODE,
        )

    def describe(self) -> dict[str, Any]:
        return dict(self._report)

    def close(self) -> None:
        """End of run, after every command has ended: drop the guards (removing those no
        other sandbox holds) and the private /tmp."""
        self._limiter.close()
        if self.net is not None:
            self.net.close()
        self._guards.close()
        self._tmp.close()
        if self._scope is not None:
            self._scope.close()
            self._scope = None
