"""A permission profile's read-only and denied paths under bwrap: the mounts that enforce them,
and a watch on the paths themselves.

A mount covers a path for one command. Inside a writable root, a command could rename a
directory above a denied file (the mount moves with it, so that command still sees nothing),
and the next command, planned for the old path, would find nothing to hide while the file sits
unmasked under the new name. So each path's identity (device and inode) is recorded when
first seen, and a command is refused, fail closed, once a path that was there has gone or
become another file.
"""

from __future__ import annotations

import os
from pathlib import Path

from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import SandboxPolicy

__all__ = ["ProfilePaths", "profile_mounts"]


def profile_mounts(policy: SandboxPolicy) -> list[str]:
    """bwrap flags for the profile's rules, to come after every other bind so they win:
    read-only paths bound read-only over the writable binds, then denied paths hidden (a
    directory under an empty read-only tmpfs, anything else under /dev/null). Symlinks are
    resolved, so a link to a denied file reaches the mask, as does /proc/self/root/<path>.
    Planned for every command: a denied path that appears during the run is hidden from the
    next command on; one that does not exist has nothing to hide."""
    args: list[str] = []
    for path in policy.read_only_paths:
        real = os.path.realpath(path)
        if os.path.exists(real):
            args += ["--ro-bind", real, real]
    for path in policy.deny_paths:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            args += ["--perms", "0000", "--tmpfs", real, "--remount-ro", real]
        elif os.path.lexists(real):
            args += ["--ro-bind", "/dev/null", real]
    return args


class ProfilePaths:
    """The identity of each profile path since it was first seen in this run."""

    def __init__(self, policy: SandboxPolicy) -> None:
        self._policy = policy
        self._seen: dict[Path, tuple[int, int]] = {}

    def check(self) -> None:
        """Raises `SandboxUnavailable` when a protected path moved or was replaced."""
        for path in (*self._policy.read_only_paths, *self._policy.deny_paths):
            try:
                info = os.stat(os.path.realpath(path))
            except FileNotFoundError:
                if path in self._seen:
                    raise self._moved(path) from None
                continue
            identity = (info.st_dev, info.st_ino)
            known = self._seen.setdefault(path, identity)
            if known != identity:
                raise self._moved(path)

    def _moved(self, path: Path) -> SandboxUnavailable:
        return SandboxUnavailable(
            f"sandbox unavailable: {path}, which permission profile `{self._policy.profile}` "
            "protects, was moved, removed or replaced during the run; no further command runs",
            hint="Do not rename the directories above a protected path during the run.",
        )
