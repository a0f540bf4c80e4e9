"""The full Linux backend: the system bubblewrap plus our seccomp filter.

Read-only root, a private /tmp and $TMPDIR per sandbox (privtmp.py), writable roots bound,
protected names re-bound read-only (missing ones get an empty read-only tmpfs), new
user/pid/ipc(/net) namespaces, `--new-session`, `--die-with-parent`, all capabilities dropped.
bwrap runs under a tiny `/bin/sh` wrapper that reads bwrap's `--json-status-fd` record and
exits 125 when the command never started, so a setup failure cannot be mistaken for the
command's own exit status 1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oiexec.sandbox import hooks, mountpoints, profiles, seccomp
from oiexec.sandbox.base import PreparedCommand, SandboxPolicy
from oiexec.sandbox.paths import PROTECTED_NAMES, protected_gitdirs, real_writable_roots
from oiexec.sandbox.privtmp import PrivateRoot, PrivateTmp

SETUP_FAILURE_EXIT_CODE = 125

# $0 is bwrap; the status fd number is substituted. Only shell builtins after bwrap exits.
_WRAPPER = (
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
    """The first `bwrap` on PATH outside every writable root, else a fixed system path."""
    override = hooks.bwrap_override()
    if override:
        return override if os.access(override, os.X_OK) else None
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        real_dir = Path(os.path.realpath(entry))
        if any(real_dir == r or r in real_dir.parents for r in writable_roots):
            continue
        candidate = shutil.which("bwrap", path=str(real_dir))
        if candidate:
            return candidate
    fallbacks: list[str] = profiles.load("linux/bwrap.toml")["fallback_paths"]
    return next((p for p in fallbacks if os.access(p, os.X_OK)), None)


def mount_args(
    policy: SandboxPolicy, features: BwrapFeatures, private: Sequence[PrivateRoot] = ()
) -> tuple[list[str], list[Path]]:
    """Mount flags (order matters: later mounts win) and the host mount points bwrap creates.

    Private temp roots come first, so a workspace under /tmp is bound on top of the private
    /tmp and its mount point is made inside the private dir, never in the host's /tmp.
    """
    args = ["--ro-bind", "/", "/", "--dev", "/dev"]
    private_paths = {p.path for p in private}
    for temp in sorted((p for p in private if p.bind), key=lambda p: len(p.path.parts)):
        args += ["--bind", str(temp.host), str(temp.path)]
    for temp in private:
        for name in PROTECTED_NAMES:
            args += ["--ro-bind", str(temp.host / name), str(temp.path / name)]
    roots = sorted(
        (r for r in real_writable_roots(policy) if r not in private_paths),
        key=lambda p: len(p.parts),
    )
    for root in roots:
        args += ["--bind", str(root), str(root)]
    created: list[Path] = []
    for root in roots:
        for name in PROTECTED_NAMES:
            path = root / name
            if path.is_symlink():
                # Mounts follow links: guard the existing target (a dangling link is left
                # alone, since mounting on it would create its target).
                target = os.path.realpath(path)
                if os.path.exists(target):
                    args += ["--ro-bind", target, target]
            elif path.exists():
                args += ["--ro-bind", str(path), str(path)]
            elif _creatable_in(root):
                # bwrap has to mkdir this (empty) mount point on the host; it is removed after
                # the command (mountpoints.py). Never in /tmp: that is a private root above.
                args += ["--perms", "0555", "--tmpfs", str(path), "--remount-ro", str(path)]
                created.append(path)
    for gitdir in protected_gitdirs(policy):
        args += ["--ro-bind", str(gitdir), str(gitdir)]
    if features.proc:
        args += ["--proc", "/proc"]
    return args, created


def _creatable_in(directory: Path) -> bool:
    """Whether the sandboxed user could create an entry in `directory` by permission bits.

    Not `os.access`: root passes it through CAP_DAC_OVERRIDE, which it lacks inside bwrap's
    user namespace, and then bwrap fails to make the mount point.
    """
    try:
        info = directory.stat()
    except OSError:
        return False
    if info.st_uid == os.geteuid():
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid in (os.getegid(), *os.getgroups()):
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)


def bwrap_args(
    policy: SandboxPolicy,
    features: BwrapFeatures,
    *,
    status_fd: int,
    seccomp_fd: int,
    private: Sequence[PrivateRoot] = (),
) -> tuple[list[str], list[Path]]:
    data = profiles.load("linux/bwrap.toml")
    args = list(data["base_flags"])
    args += [f for f in data["optional_flags"] if features.keeps(f)]
    mounts, created = mount_args(policy, features, private)
    args += mounts
    if policy.network_disabled:
        args += [f for f in data["network_off_flags"] if features.keeps(f)]
    args += ["--json-status-fd", str(status_fd), "--seccomp", str(seccomp_fd)]
    args += ["--setenv", "OPENINTERPRETER_SANDBOX", policy.mode]
    if policy.network_disabled:
        args += ["--setenv", "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED", "1"]
    else:
        args += ["--unsetenv", "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"]
    return args, created


def wrap(bwrap_path: str, args: list[str], status_fd: int) -> list[str]:
    script = _WRAPPER.format(fd=status_fd, setup=SETUP_FAILURE_EXIT_CODE)
    return ["/bin/sh", "-c", script, bwrap_path, *args]


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

    def __init__(self, policy: SandboxPolicy, features: BwrapFeatures, report: dict[str, Any]):
        self._policy = policy
        self._features = features
        self._report = report
        self._program = seccomp.filter_for(policy, backend=self.backend)
        self._tmp = PrivateTmp()

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        status_fd = os.memfd_create("oiexec-bwrap-status", os.MFD_CLOEXEC)
        seccomp_fd = seccomp.filter_fd(self._program)
        args, created = bwrap_args(
            self._policy,
            self._features,
            status_fd=status_fd,
            seccomp_fd=seccomp_fd,
            private=self._tmp.roots(self._policy),
        )
        real_cwd = os.path.realpath(cwd)
        args += ["--chdir", real_cwd, "--", *argv]
        mountpoints.acquire(created)

        def after() -> list[str]:
            for fd in (status_fd, seccomp_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
            mountpoints.release(created)
            return []

        return PreparedCommand(
            argv=wrap(self._features.path, args, status_fd),
            env=sandbox_env(self._policy, env),
            cwd=cwd,
            pass_fds=(status_fd, seccomp_fd),
            after=after,
            setup_failure_exit_code=SETUP_FAILURE_EXIT_CODE,
        )

    def describe(self) -> dict[str, Any]:
        return dict(self._report)

    def close(self) -> None:
        """End of run: remove the private /tmp (commands still running lose its files)."""
        self._tmp.close()
