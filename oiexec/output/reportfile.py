"""Writing a report (diff, JUnit, SARIF, last message, batch files) where the user said.

Reports are written by the runner, outside the sandbox, at the end of a run whose commands
may have changed the very directories the paths point into. So where a report lands is
settled before the model runs, and nothing the model does later can move it:

- The report's directory is opened (created if missing) when the flags are checked, and the
  report is written relative to that descriptor: a temp file created in it and renamed over
  the name, both `*at` calls. A directory on the way swapped for a symlink during the run is
  never followed. If the path no longer names the directory opened at the start (another
  directory, or a symlink now), the report is not written and the error says why.
- That the report can be written there is proved then too (output/writable): a read-only
  mount, a directory the runner's user cannot write, or a path under a regular file is a
  usage error before the model is called, not a warning after the whole run.
- The final name is never written through: the rename replaces a symlink a command planted
  there, rather than following it (`change.patch -> .git/hooks/pre-commit`).

What the path named before the run is the user's choice and is honoured: a symlink at the
final name is resolved then, and the report replaces what it pointed to then; a character
device (`/dev/null`, a terminal, `/dev/stdout` on one) is opened then and written into as a
shell redirection would, never replaced by a file (that once turned a root runner's
/dev/null into a regular file); the runner's own stdout or stderr as a pipe or socket
(`/dev/stdout` in a pipeline, a journal stream) is written into likewise. Any other FIFO
(its write would wait for a reader), socket, block device or directory is refused at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from oiexec.core.errors import UsageError
from oiexec.output.writable import cannot_write, why_not

__all__ = ["ReportDir", "ReportDirChanged", "ReportTarget", "write_report"]

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_HOPS = 40  # symlinks followed on one path, as the kernel allows
_HINT = "Name a regular file (a missing one is created), or a character device such as /dev/null."
_WRITE_HINT = "Name a file the runner's user can write, on a filesystem mounted read-write."


class ReportDirChanged(OSError):
    """The report's directory is no longer what its path named when the run started."""


class ReportTarget:
    """One report file, its place fixed by `open` (before the model runs); `write` puts the
    data there later. `label` names it in messages (`--junit`). Holds a descriptor until
    `close`."""

    def __init__(
        self,
        label: str,
        path: Path,
        *,
        directory: tuple[int, str] | None = None,
        name: str = "",
        stream: int = -1,
        append: bool = False,
    ) -> None:
        self.label = label
        #: The path as the user gave it (for messages).
        self.path = path
        #: The directory's descriptor and its symlink-free path, both as at the start.
        self._dirfd, self._dir_path = directory or (-1, "")
        self._dir_id = _identity(os.fstat(self._dirfd)) if self._dirfd >= 0 else (0, 0)
        self._name = name
        #: A device or std stream, opened at the start and written into.
        self._stream = stream
        self.append = append

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        label: str,
        *,
        append: bool = False,
        untrusted: Sequence[Path] = (),
    ) -> ReportTarget:
        """Fixes where the report goes; `UsageError` naming `label` when the path can never take
        a report (a FIFO, a socket, a directory, a block device) or its directory cannot be
        created or opened. `append` adds to an existing file instead of replacing it.

        `untrusted` are directories whose content a command (of this run or an earlier one) or
        a change under review may have written: the workspace, the writable roots. Beneath
        them no symlink is followed, even one there before the run (it is not the user's
        choice): a link on the way is refused, one at the final name replaced."""
        given = Path(path)
        roots = [Path(os.path.realpath(root)) for root in untrusted]
        return cls._open(label, given, Path(os.path.abspath(given)), append, roots, 0)

    @classmethod
    def _open(
        cls, label: str, given: Path, full: Path, append: bool, roots: list[Path], hops: int
    ) -> ReportTarget:
        where = _resolve_parents(full, roots)
        if where is None:
            raise _refused(label, given, "too many levels of symbolic links")
        if isinstance(where, tuple):
            return cls._open_beneath(label, given, append, *where)
        full = where
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise _refused(label, given, why_not(exc, full)) from None
        if info is not None and stat.S_ISLNK(info.st_mode):
            # A link that is there before the run is the user's: follow it now, once.
            try:
                info = os.stat(full)
            except FileNotFoundError:
                info = None  # dangling: the report creates what it names
            except OSError as exc:
                raise _refused(label, given, exc.strerror or str(exc)) from None
            if info is None or stat.S_ISREG(info.st_mode):
                if hops > _MAX_HOPS:
                    raise _refused(label, given, "too many levels of symbolic links")
                # What it names, looked at again: it may lead into the workspace.
                target = full.parent / os.readlink(full)
                target = Path(os.path.normpath(target))
                return cls._open(label, given, target, append, roots, hops + 1)
        if info is not None and (not stat.S_ISREG(info.st_mode) or _std_stream(info)):
            return cls(label, given, stream=_open_stream(label, given, full, info))
        directory = _open_dir(label, given, full.parent)
        _check_writable(label, given, directory, full.name, append)
        return cls(label, given, directory=directory, name=full.name, append=append)

    @classmethod
    def _open_beneath(
        cls, label: str, given: Path, append: bool, root: Path, relative: PurePosixPath
    ) -> ReportTarget:
        from oiexec.sandbox.beneath import directory_flags, makedirs_beneath, open_beneath

        if not relative.parts:
            raise _refused(label, given, "is a directory")
        try:
            rootfd = os.open(root, _DIR_FLAGS)  # the root itself as named (the user's)
        except OSError as exc:
            raise _refused(label, given, f"cannot open {root}: {exc.strerror or exc}") from None
        try:
            parent = relative.parent.as_posix()
            makedirs_beneath(rootfd, parent)
            dirfd = open_beneath(rootfd, parent, directory_flags(), 0)
        except OSError as exc:
            why = why_not(exc, root / relative)
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                why = (
                    f"a directory on the way is a symbolic link inside {root}, which commands "
                    "can write: a report never follows one there (it may have been planted by "
                    "an earlier run or the change under review)"
                )
            raise _refused(label, given, why) from None
        finally:
            os.close(rootfd)
        name = relative.name
        try:
            info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is None or stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            directory = (dirfd, _fd_path(dirfd, root / relative.parent))
            _check_writable(label, given, directory, name, append)
            return cls(label, given, directory=directory, name=name, append=append)
        try:
            stream = _open_stream(label, given, name, info, dir_fd=dirfd)
        finally:
            os.close(dirfd)
        return cls(label, given, stream=stream)

    def write(self, data: bytes | str) -> None:
        """Writes `data` (str as UTF-8); raises OSError (`ReportDirChanged` when the directory
        was replaced during the run). A file gets the usual mode of new files (0o666 minus the
        umask)."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if self._stream >= 0:
            # The runner's own buffered output goes first, as it would before a redirection.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            _write_all(self._stream, raw)
            return
        if self._dirfd < 0:
            raise OSError(errno.EBADF, "the report target is closed", str(self.path))
        self._check_directory()
        if self.append:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
            fd = os.open(self._name, flags | os.O_CLOEXEC, 0o666, dir_fd=self._dirfd)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(errno.EINVAL, "not a regular file", str(self.path))
                _write_all(fd, raw)
            finally:
                os.close(fd)
            return
        _replace(self._dirfd, self._name, raw)

    def close(self) -> None:
        for fd in (self._dirfd, self._stream):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._dirfd = self._stream = -1

    def __enter__(self) -> ReportTarget:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _check_directory(self) -> None:
        """Whether the path still names the directory opened at the start, no symlink on the
        way: only for the message (the write goes into the held directory either way)."""
        from oiexec.sandbox.beneath import open_root

        try:
            now = open_root(self._dir_path)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EXDEV):
                raise
            same = False
        else:
            try:
                same = _identity(os.fstat(now)) == self._dir_id
            finally:
                os.close(now)
        if not same:
            raise ReportDirChanged(
                errno.ELOOP,
                f"its directory {self._dir_path} was replaced during the run (by a symlink or "
                "another directory); not followed, the report was not written",
                str(self.path),
            )


class ReportDir:
    """A directory of reports (a batch's `--out`), opened once before any task runs and held:
    every file beneath it is written, and every subdirectory made, relative to it with no
    symlink followed at any component (sandbox/beneath), so a task directory swapped for a
    link is an error (ELOOP), never followed."""

    def __init__(self, path: Path, fd: int) -> None:
        #: The directory as named when it was opened (absolute).
        self.path = path
        self._fd = fd

    @classmethod
    def open(cls, path: str | os.PathLike[str], label: str = "--out") -> ReportDir:
        """Creates `path` if missing (links on the way, there before anything ran, are the
        user's) and opens it; `UsageError` naming `label` when it cannot be."""
        full = Path(os.path.abspath(path))
        directory = _open_dir(label, full, full)
        _check_writable(label, full, directory, "", False)
        return cls(full, directory[0])

    def makedirs(self, relative: str) -> None:
        """Makes `relative` and its missing parents; `ReportDirChanged` for a link on the way."""
        from oiexec.sandbox.beneath import makedirs_beneath

        try:
            makedirs_beneath(self._fd, relative)
        except OSError as exc:
            raise self._changed(exc, relative) from None

    def write(self, relative: str, data: bytes | str) -> None:
        """Replaces `relative` (its directories made as needed) with `data`; raises OSError."""
        from oiexec.sandbox.beneath import directory_flags, makedirs_beneath, open_beneath

        raw = data.encode("utf-8") if isinstance(data, str) else data
        directory, _, name = relative.rpartition("/")
        try:
            if directory:
                makedirs_beneath(self._fd, directory)
            parent = open_beneath(self._fd, directory or ".", directory_flags(), 0)
        except OSError as exc:
            raise self._changed(exc, relative) from None
        try:
            _replace(parent, name, raw)
        finally:
            os.close(parent)

    def open_file(self, relative: str, *, append: bool = False) -> int:
        """A write descriptor of the regular file `relative` (created; emptied unless
        `append`), opened with no symlink followed; the caller closes it."""
        from oiexec.sandbox.beneath import open_beneath

        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = open_beneath(self._fd, relative, flags | (os.O_APPEND if append else 0), 0o644)
        except OSError as exc:
            raise self._changed(exc, relative) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", relative)
            if not append:
                os.ftruncate(fd, 0)  # only now: a FIFO or device there is never truncated
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def unlink(self, relative: str) -> None:
        """Removes the file `relative` (a symlink itself, never what it names)."""
        from oiexec.sandbox.beneath import unlink_beneath

        unlink_beneath(self._fd, relative)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _changed(self, exc: OSError, relative: str) -> OSError:
        """`exc`, said plainly when it means a symlink on the way (ELOOP, EXDEV)."""
        if exc.errno not in (errno.ELOOP, errno.EXDEV):
            return exc
        return ReportDirChanged(
            exc.errno,
            f"a directory on the way to it in {self.path} is a symlink (a task replaced it?); "
            "not followed, nothing written there",
            relative,
        )


def write_report(path: str | os.PathLike[str], data: bytes | str, label: str = "report") -> None:
    """Opens and writes at once, for a path no command could have touched in between (a file
    of the runner's own temp directory); raises OSError, `UsageError` for a refused target."""
    with ReportTarget.open(path, label) as target:
        target.write(data)


def _refused(label: str, given: Path, why: str, hint: str = _HINT) -> UsageError:
    return UsageError(f"{label} {given}: {why}", hint=hint)


def _check_writable(
    label: str, given: Path, directory: tuple[int, str], name: str, append: bool
) -> None:
    """Refuses, before the model runs, a report its write at the end would fail to put there
    (output/writable): a read-only mount, a directory the user cannot write."""
    why = cannot_write(*directory, name, append=append)
    if why is not None:
        os.close(directory[0])
        raise _refused(label, given, why, _WRITE_HINT)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _resolve_parents(full: Path, roots: Sequence[Path]) -> Path | tuple[Path, PurePosixPath] | None:
    """`full` with the symlinks on the way to its last component resolved, one at a time, up
    to the first directory inside one of `roots` (real paths): from there on nothing is
    resolved, and (that root, the rest) is returned. None: a symlink loop."""
    pending = list(full.parts[1:-1])
    current = Path("/")
    hops = 0
    while pending:
        if _inside(roots, current) is not None:
            break
        name = pending.pop(0)
        if name == "..":
            current = current.parent
            continue
        candidate = current / name
        try:
            is_link = stat.S_ISLNK(os.lstat(candidate).st_mode)
        except OSError:
            is_link = False  # missing (made later) or not a directory (refused later)
        if not is_link:
            current = candidate
            continue
        hops += 1
        if hops > _MAX_HOPS:
            return None
        link = PurePosixPath(os.readlink(candidate))
        if link.is_absolute():
            current = Path("/")
        pending[:0] = [part for part in link.parts if part not in ("/", ".")]
    rest = PurePosixPath(*pending, full.name)
    inside = _inside(roots, current)
    if inside is not None:
        # Lexically from here: nothing beneath a root is resolved (a `..` out of it is refused).
        return inside[0], PurePosixPath(os.path.normpath(inside[1] / rest))
    return current / rest


def _inside(roots: Sequence[Path], full: Path) -> tuple[Path, PurePosixPath] | None:
    """The deepest of `roots` holding `full` (by name) and the rest of the path."""
    best: Path | None = None
    for root in roots:
        if (full == root or root in full.parents) and (
            best is None or len(root.parts) > len(best.parts)
        ):
            best = root
    return None if best is None else (best, PurePosixPath(full.relative_to(best)))


def _fd_path(fd: int, named: Path) -> str:
    """The absolute, symlink-free path of the directory `fd` (from the descriptor itself where
    /proc tells, so the two cannot disagree); `named` is how it was reached."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (macOS): nothing has run yet that could move it
        return os.path.realpath(named)


def _open_dir(label: str, given: Path, directory: Path) -> tuple[int, str]:
    """The directory's descriptor and its absolute, symlink-free path."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        why = f"cannot create or open its directory {directory}: {why_not(exc, directory)}"
        raise _refused(label, given, why) from None
    return fd, _fd_path(fd, directory)


def _std_stream(info: os.stat_result) -> int | None:
    """Which of the runner's stdout (1) and stderr (2) `info` describes, if either (by inode:
    `/dev/stdout` links to /proc/self/fd/1, which `stat` follows to the pipe or file)."""
    for fd in (1, 2):
        try:
            if _identity(os.fstat(fd)) == _identity(info):
                return fd
        except OSError:
            continue
    return None


def _open_stream(
    label: str,
    given: Path,
    full: Path | str,
    info: os.stat_result,
    *,
    dir_fd: int | None = None,
) -> int:
    """A descriptor to write the report into the non-regular file `full` (relative to
    `dir_fd`, not followed, when given); `UsageError` for one that cannot take a report."""
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise _refused(label, given, "is a directory")
    if stat.S_ISBLK(mode):
        raise _refused(label, given, "is a block device; a report never overwrites a disk")
    std = _std_stream(info)
    if std is not None:
        # `/dev/stdout` in a pipeline, or stderr sent to a log: where the runner writes itself.
        return os.dup(std)
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        what = "a FIFO (its write would wait for a reader)" if stat.S_ISFIFO(mode) else "a socket"
        raise _refused(label, given, f"is {what}; a report is never written into one")
    if not stat.S_ISCHR(mode):
        raise _refused(label, given, "is not a regular file or a character device")
    # O_NONBLOCK: a device whose open would wait (a modem line) fails instead of hanging.
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
    if dir_fd is not None:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(full, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise _refused(label, given, exc.strerror or str(exc)) from None
    if not stat.S_ISCHR(os.fstat(fd).st_mode):  # replaced between the look and the open
        os.close(fd)
        raise _refused(label, given, "changed while it was opened")
    os.set_blocking(fd, True)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace(dirfd: int, name: str, data: bytes) -> None:
    """A temp file in `dirfd` renamed over `name`: a planted link is replaced, not followed."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    # Created 0o666 so the kernel applies the umask (reading it would race other threads).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=dirfd)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dirfd)
        raise
