"""A permission profile's read-only and denied paths under bwrap: the mounts that enforce them,
and a watch on the paths themselves.

A mount covers a path for one command, and it is planned (symlinks resolved) in the runner
before bwrap makes it. Inside a writable root, a command could rename a directory above a
denied file: the mount moves with it, and the next command, planned for the old path, would
find nothing to hide while the file sits unmasked under the new name. Worse, a background
command swapping two directories over and over (`renameat2(RENAME_EXCHANGE)`) could make
bwrap put the mask on a decoy between planning and mounting, with the real file left readable
under the other name. So:

- every directory between a writable root and a protected path is bound onto itself
  (`pin_mounts`): the kernel refuses to rename or remove a mount point (EBUSY), so no command,
  running in the background or not, can move anything above a protected path;
- each path's identity (device and inode) is recorded when first seen, and a command is
  refused, fail closed, once a path that was there has gone or become another file (it can
  still be replaced from outside the sandbox).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import SandboxPolicy

__all__ = ["ProfilePaths", "pin_mounts", "profile_mounts"]


def pin_mounts(policy: SandboxPolicy, roots: Sequence[Path]) -> list[str]:
    """bwrap flags binding onto itself every existing directory strictly between one of the
    (real) writable `roots` and a protected path inside it, parents first. To come right
    after the roots' own binds: the read-only and masking mounts made later stack on top."""
    pinned: list[Path] = []
    for path in (*policy.read_only_paths, *policy.deny_paths):
        real = Path(os.path.realpath(path))
        if not os.path.lexists(real):
            continue  # nothing to hide yet; planned again for the next command
        holders = [root for root in roots if root in real.parents]
        if not holders:
            continue  # outside every writable root: nothing above it can be renamed
        current = min(holders, key=lambda root: len(root.parts))
        for part in real.relative_to(current).parts[:-1]:
            current = current / part
            if current not in pinned and os.path.isdir(current):
                pinned.append(current)
    pinned.sort(key=lambda directory: len(directory.parts))
    return [arg for directory in pinned for arg in ("--bind", str(directory), str(directory))]


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
