"""Whether a report can be written where it is going, proved when it is opened.

Opening a report's directory (output/reportfile) fixes *where* the report goes, not that it
can be written there: a read-only mount, a directory the runner's user may not write (root
passes every mode but not a read-only mount), a full disk, or a sticky directory (`/tmp`)
holding another user's file under the name all failed only at the end, when the temp file was
created and renamed over the name, after the whole task had run. So when a report is opened,
before the model is called, the operations its write will make are tried on the directory
descriptor just opened, by name relative to it, no link followed:

- a file is created in it: an unnamed one (O_TMPFILE), which never appears in the directory
  and cannot be left behind; where the filesystem cannot make one, a probe file with a random
  name (O_EXCL, O_NOFOLLOW) is created and removed at once;
- for a report appended to (the GitHub step summary), the existing file is opened for writing
  as the write will open it (no O_CREAT, no O_TRUNC: nothing changes);
- for a report replacing a file in a sticky directory, the kernel's rule for renaming over it
  (the file's owner, the directory's owner or root) is checked from the owners: a rename
  cannot be tried without replacing the user's file.

The same trial, with the same kernel, mounts and ids, is what the write at the end makes, so a
path that passes it fails later only if something changes it during the run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

__all__ = ["blocking_file", "cannot_write", "why_not"]

#: What `open(O_TMPFILE)` says where the filesystem (or an old kernel) cannot make an unnamed
#: file: the named probe is tried instead. Anything else (EACCES, EROFS, ENOSPC) is the answer.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EISDIR, errno.EINVAL})


def cannot_write(dirfd: int, directory: str, name: str = "", *, append: bool = False) -> str | None:
    """None when a report named `name` (none: any file) can be written in the directory held
    by `dirfd` (`directory` is its path, for the message); otherwise why not, in words."""
    try:
        _create_probe(dirfd)
    except OSError as exc:
        return f"cannot write in its directory {directory}: {exc.strerror or exc}"
    if not name:
        return None
    try:
        info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None  # created by the write: the probe showed it can be
    except OSError as exc:
        return exc.strerror or str(exc)
    if append:
        if not stat.S_ISREG(info.st_mode):
            return None  # refused (or written as a device) by the caller
        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            os.close(os.open(name, flags, dir_fd=dirfd))
        except OSError as exc:
            return f"cannot append to it: {exc.strerror or exc}"
        return None
    return _sticky_refusal(dirfd, directory, name, info)


def why_not(exc: OSError, full: Path) -> str:
    """Why `full` cannot be opened, from `exc`; for ENOTDIR or EEXIST, the file that stands
    where a directory should (`--junit report.xml/junit.xml`)."""
    blocker = blocking_file(full) if exc.errno in (errno.ENOTDIR, errno.EEXIST) else None
    if blocker is not None:
        return f"{blocker} is a file, not a directory, so nothing can be written beneath it"
    return exc.strerror or str(exc)


def blocking_file(path: Path) -> Path | None:
    """The first of `path`'s ancestors (then `path` itself) that exists and is not a directory
    (a report asked for under a regular file: `report.xml/junit.xml`), to name it."""
    for parent in [*reversed(path.parents), path]:
        try:
            mode = os.stat(parent).st_mode
        except OSError:
            return None
        if not stat.S_ISDIR(mode):
            return parent
    return None


def _create_probe(dirfd: int) -> None:
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if tmpfile:
        try:
            os.close(os.open(".", tmpfile | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dirfd))
            return
        except OSError as exc:
            if exc.errno not in _NO_TMPFILE:
                raise
    probe = f".oiexec-probe-{secrets.token_hex(6)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(probe, flags, 0o600, dir_fd=dirfd))
    with contextlib.suppress(OSError):
        os.unlink(probe, dir_fd=dirfd)


def _sticky_refusal(dirfd: int, directory: str, name: str, info: os.stat_result) -> str | None:
    """Why the rename over `name` would fail in a sticky directory, if it would: only the
    file's owner, the directory's owner or root (CAP_FOWNER) may replace a file there."""
    parent = os.fstat(dirfd)
    if not parent.st_mode & stat.S_ISVTX:
        return None
    me = os.geteuid()
    if me == 0 or me in (info.st_uid, parent.st_uid):
        return None
    return (
        f"it belongs to another user (uid {info.st_uid}) in the sticky directory {directory}, "
        "where only its owner can replace it"
    )
