"""The one writer of files on the model's behalf: file tools and patches alike.

A tool first asks `resolve` where a path leads and whether the policy allows writing there,
then hands the resolved target to `write` or `remove`, or several targets at once to `commit`,
which writes them all or puts back the ones already written. Each write goes to a temp file
beside the target renamed over it (`beneath.write_beneath`: mode and owner kept, a file with
other hard links rewritten in place). Between the check and the IO a sandboxed command may
swap a directory on the way for a symlink; so `PolicyWriter` does the IO beneath the writable
root holding the target with no symlink followed (`oiexec.sandbox.beneath`), re-judges the
target by name, and reports a swap as `PathChanged` instead of writing wherever it now leads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import beneath
from oiexec.sandbox.paths import resolved_write_denial, write_denial

_T = TypeVar("_T")

#: Why writing a path is refused, or None when it is allowed: a bare callback (the IO is then
#: direct) or a `FileWriter`, which is such a callback too.
WriteGuard = Callable[[Path], "str | None"]


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


class CommitFailed(Exception):
    """`commit` could not `verb` `target` (`cause`); `restored` says whether every file it had
    already written was put back, so that nothing changed."""

    def __init__(
        self, target: Path, cause: OSError, *, verb: Literal["read", "write"], restored: bool
    ) -> None:
        super().__init__(f"cannot {verb} {target}: {cause}")
        self.target = target
        self.cause = cause
        self.verb = verb
        self.restored = restored


#: O_NONBLOCK: a FIFO planted at the target is refused (`_read_all`) instead of hanging the runner.
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def _read_all(fd: int) -> bytes:
    """The regular file `fd` (closed here), bounded as every in-process read is
    (`oiexec.sandbox.reader`): a patch aimed at /dev/zero must not grow the runner."""
    from oiexec.sandbox.reader import DEFAULT_MAX_BYTES

    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket)")
        os.set_blocking(handle.fileno(), True)
        data = handle.read(DEFAULT_MAX_BYTES + 1)
    if len(data) > DEFAULT_MAX_BYTES:
        raise OSError(errno.EFBIG, f"bigger than the {DEFAULT_MAX_BYTES} bytes edited in-process")
    return data


@dataclass(frozen=True)
class _Link:
    """A symlink as `commit` found it, to put back on rollback."""

    points_to: str


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

    def __init__(self, denial: WriteGuard | None = None) -> None:
        self._denial = denial

    def __call__(self, path: Path) -> str | None:
        """Why writing `path` is refused, or None (so a writer is also a plain guard)."""
        return self._denial(path) if self._denial is not None else None

    def resolve(self, path: Path, *, link_itself: bool = False) -> tuple[Path, str | None]:
        """Where writing (or, with `link_itself`, removing) `path` acts, and why the policy
        refuses it (None: allowed). Pass that target on to `write` or `remove`. Raises
        `PathChanged` if the path keeps changing while it is resolved."""
        return _settled(path, lambda: (_resolved(path, link_itself), self(path)))

    def read(self, target: Path) -> bytes | None:
        """The bytes of the resolved file `target`, or None when there is none."""
        try:
            fd = os.open(target, _READ_FLAGS)
        except FileNotFoundError:
            return None
        return _read_all(fd)

    def write(self, target: Path, data: bytes) -> None:
        """Write `data` to the resolved `target`, creating its parents (see `write_beneath`)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        parent = os.open(target.parent, beneath.directory_flags())
        try:
            beneath.write_beneath(parent, target.name, data)
        finally:
            os.close(parent)

    def remove(self, target: Path) -> None:
        """Remove the resolved file (or link) `target`."""
        target.unlink()

    def readlink(self, target: Path) -> str | None:
        """What the symlink `target` (not resolved) points to; None if it is not one."""
        return os.readlink(target) if target.is_symlink() else None

    def symlink(self, target: Path, points_to: str) -> None:
        """Create the symlink `target` pointing to `points_to`."""
        os.symlink(points_to, target)

    def commit(self, states: Mapping[Path, bytes | None]) -> None:
        """Bring every resolved target to its state (bytes, or None: removed), in order, all or
        nothing: if one fails, the ones already done are put back as they were (a removed
        symlink included). Raises `CommitFailed`."""
        originals: dict[Path, bytes | _Link | None] = {}
        for target in states:
            try:
                link = self.readlink(target)
                originals[target] = _Link(link) if link is not None else self.read(target)
            except OSError as exc:
                raise CommitFailed(target, exc, verb="read", restored=True) from exc
        done: list[Path] = []
        for target, data in states.items():
            try:
                self._put(target, data)
            except OSError as exc:
                restored = self._restore(done, originals)
                raise CommitFailed(target, exc, verb="write", restored=restored) from exc
            done.append(target)

    def _put(self, target: Path, state: bytes | _Link | None) -> None:
        if isinstance(state, bytes):
            self.write(target, state)
            return
        # Already gone is fine: a rollback of a file the commit failed to create.
        with contextlib.suppress(FileNotFoundError):
            self.remove(target)
        if isinstance(state, _Link):
            self.symlink(target, state.points_to)

    def _restore(self, done: list[Path], originals: Mapping[Path, bytes | _Link | None]) -> bool:
        ok = True
        for target in reversed(done):
            try:
                self._put(target, originals[target])
            except OSError:
                ok = False
        return ok


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

    def _guarded(self, target: Path, action: Callable[[], _T]) -> _T:
        try:
            return action()
        except OSError as exc:
            if beneath.changed_under_us(exc):
                raise PathChanged(target) from exc
            raise

    def read(self, target: Path) -> bytes | None:
        if self._policy.mode == "danger-full-access":
            return super().read(target)
        root, relative = self._beneath(target)
        try:
            fd = self._guarded(target, lambda: beneath.open_beneath(root, relative, _READ_FLAGS))
        except FileNotFoundError:
            return None
        return _read_all(fd)

    def write(self, target: Path, data: bytes) -> None:
        if self._policy.mode == "danger-full-access":
            super().write(target, data)
            return
        root, relative = self._beneath(target)
        self._guarded(target, lambda: beneath.write_beneath(root, relative, data))

    def remove(self, target: Path) -> None:
        if self._policy.mode == "danger-full-access":
            super().remove(target)
            return
        root, relative = self._beneath(target)
        self._guarded(target, lambda: beneath.unlink_beneath(root, relative))

    def readlink(self, target: Path) -> str | None:
        if self._policy.mode == "danger-full-access":
            return super().readlink(target)
        root, relative = self._beneath(target)
        return self._guarded(target, lambda: beneath.readlink_beneath(root, relative))

    def symlink(self, target: Path, points_to: str) -> None:
        if self._policy.mode == "danger-full-access":
            super().symlink(target, points_to)
            return
        root, relative = self._beneath(target)
        self._guarded(target, lambda: beneath.symlink_beneath(root, relative, points_to))


def as_writer(guard: WriteGuard | None) -> FileWriter:
    """A writer for what a tool was given: itself, or direct IO judged by a bare callback."""
    if isinstance(guard, FileWriter):
        return guard
    return FileWriter(guard)
