"""Writing, replacing and removing files on the model's behalf.

A tool first asks `resolve` where a path leads and whether the policy allows writing there,
then hands the resolved target to `write` or `remove`. Between the two a sandboxed command may
swap a directory on the way for a symlink; so `PolicyWriter` does the IO beneath the writable
root holding the target with no symlink followed (`oiexec.sandbox.beneath`), re-judges the
target by name, and reports a swap as `PathChanged` instead of writing wherever it now leads.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import beneath
from oiexec.sandbox.paths import resolved_write_denial, write_denial

#: Why writing a path is not allowed, or None when it is (what the tools used to be given).
Denial = Callable[[Path], "str | None"]


class PathChanged(OSError):
    """The path changed between the policy check and the IO (a symlink or a way out of the
    writable root appeared on it); nothing was written to it."""

    def __init__(self, target: Path) -> None:
        super().__init__(
            f"{target} changed while being written (a symlink appeared on its way); "
            "nothing was written there"
        )
        self.target = target


class WriteDenied(PermissionError):
    """The policy refuses the path the IO was about to touch."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: How often a resolution that keeps meeting a symlink being replaced is retried.
_RESOLVE_TRIES = 20


def _resolved(path: Path, link_itself: bool) -> Path:
    if link_itself:
        # A removal takes the link itself, in its real directory.
        return Path(os.path.realpath(path.parent)) / path.name
    return Path(os.path.realpath(path))


def _settled(path: Path, judge: Callable[[], tuple[Path, str | None]]) -> tuple[Path, str | None]:
    # realpath reads a link that lstat just saw; when a command swaps it for a directory in
    # between, readlink fails (EINVAL). Such a path is in flux: look again, then give up.
    for _ in range(_RESOLVE_TRIES):
        try:
            return judge()
        except OSError:
            continue
    raise PathChanged(path)


class FileWriter:
    """Direct IO, judged only by the optional `denial` callback: for callers without a
    sandbox to hold (tests, `danger-full-access`)."""

    def __init__(self, denial: Denial | None = None) -> None:
        self._denial = denial

    def __call__(self, path: Path) -> str | None:
        """Why writing `path` is refused, or None (so a writer is also a plain guard)."""
        return self._denial(path) if self._denial is not None else None

    def resolve(self, path: Path, *, link_itself: bool = False) -> tuple[Path, str | None]:
        """Where writing (or, with `link_itself`, removing) `path` acts, and why the policy
        refuses it (None: allowed). Pass that target on to `write` or `remove`. Raises
        `PathChanged` if the path keeps changing while it is resolved."""
        return _settled(path, lambda: (_resolved(path, link_itself), self(path)))

    def write(self, target: Path, data: bytes, *, in_place: bool) -> None:
        """Write `data` to the resolved `target`, creating its parents: rewritten in place
        (keeping mode, owner and hard links), or replaced atomically with a temp file."""
        target.parent.mkdir(parents=True, exist_ok=True)
        parent = os.open(target.parent, beneath.directory_flags())
        try:
            beneath.write_beneath(parent, target.name, data, in_place=in_place)
        finally:
            os.close(parent)

    def remove(self, target: Path) -> None:
        """Remove the resolved file (or link) `target`."""
        target.unlink()


class PolicyWriter(FileWriter):
    """The sandbox's writer: judged by `write_denial`, and in `workspace-write` done beneath
    the writable root holding the target, following no symlink."""

    def __init__(self, policy: SandboxPolicy) -> None:
        super().__init__(lambda path: write_denial(policy, path))
        self._policy = policy

    def resolve(self, path: Path, *, link_itself: bool = False) -> tuple[Path, str | None]:
        # One resolution, judged and then used for the IO: a second realpath could differ.
        def judge() -> tuple[Path, str | None]:
            target = _resolved(path, link_itself)
            return target, resolved_write_denial(self._policy, path, target)

        return _settled(path, judge)

    def _beneath(self, target: Path) -> tuple[Path, str]:
        reason = resolved_write_denial(self._policy, target, target)
        if reason is not None:
            raise WriteDenied(reason)
        where = beneath.writable_root_of(self._policy, target)
        if where is None:
            raise WriteDenied(f"{target}: outside the writable roots of the sandbox")
        root, relative = where
        return root, str(relative)

    def write(self, target: Path, data: bytes, *, in_place: bool) -> None:
        if self._policy.mode == "danger-full-access":
            super().write(target, data, in_place=in_place)
            return
        root, relative = self._beneath(target)
        try:
            beneath.write_beneath(root, relative, data, in_place=in_place)
        except OSError as exc:
            if beneath.changed_under_us(exc):
                raise PathChanged(target) from exc
            raise

    def remove(self, target: Path) -> None:
        if self._policy.mode == "danger-full-access":
            super().remove(target)
            return
        root, relative = self._beneath(target)
        try:
            beneath.unlink_beneath(root, relative)
        except OSError as exc:
            if beneath.changed_under_us(exc):
                raise PathChanged(target) from exc
            raise


def as_writer(guard: Denial | FileWriter | None) -> FileWriter:
    """A writer for what a tool was given: itself, or direct IO judged by a bare callback."""
    if isinstance(guard, FileWriter):
        return guard
    return FileWriter(guard)
