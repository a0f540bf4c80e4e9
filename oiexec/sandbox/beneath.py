"""File IO confined beneath a directory, never following a symlink on the way.

The runner writes files for the model in its own process, outside the sandbox. Checking a
path and then writing it by name leaves a window in which a sandboxed command can swap a
directory on the way for a symlink to anywhere (`renameat2(RENAME_EXCHANGE)` in a loop wins
it often). Here every path is resolved relative to an open directory fd of its root with
`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, or, where the kernel
lacks openat2, by opening one component at a time with `O_NOFOLLOW`; the last step is always
an `*at` call on a leaf name relative to a directory fd already held. A symlink anywhere
fails with ELOOP and a way out of the root with EXDEV: callers treat both as "the tree changed
under us" (`changed_under_us`).

Paths given as roots must be real (symlink-free) absolute paths; relative paths may not
contain `..`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.paths import real_writable_roots

__all__ = [
    "Root",
    "changed_under_us",
    "directory_flags",
    "locate",
    "makedirs_beneath",
    "open_beneath",
    "open_root",
    "openat2_available",
    "readlink_beneath",
    "rename_beneath",
    "symlink_beneath",
    "unlink_beneath",
    "writable_root_of",
    "write_beneath",
]

#: A root directory: an open directory fd (borrowed, never closed here) or a real path.
Root = int | str | os.PathLike[str]

_SYS_OPENAT2 = 437  # the same on x86_64 and aarch64 (syscalls added after 5.1 share numbers)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
# O_PATH (Linux) opens a directory we may search but not read; elsewhere (macOS, for the
# seatbelt backend) a read-only open does.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
#: errnos that mean a symlink or a way out appeared where the caller's check saw none.
_CHANGED = frozenset({errno.ELOOP, errno.EXDEV})


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
#: Whether openat2 works here: probed on first use (None), and tests may force False.
_openat2: bool | None = None


def changed_under_us(exc: OSError) -> bool:
    """Whether `exc` means a symlink or a way out of the root appeared after the check."""
    return exc.errno in _CHANGED


def _raw_openat2(dirfd: int, path: bytes, flags: int, mode: int) -> int:
    assert _libc is not None
    # openat2 refuses a mode without O_CREAT/O_TMPFILE (EINVAL), where open(2) ignores it.
    # O_TMPFILE includes O_DIRECTORY's bit: only all of its bits mean a temp file.
    tmpfile = getattr(os, "O_TMPFILE", 0)
    creating = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
    how = _OpenHow(flags, mode if creating else 0, _RESOLVE)
    for _ in range(8):
        fd = int(
            _libc.syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dirfd),
                ctypes.c_char_p(path),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        # EAGAIN: a rename raced a `..` lookup; we never pass `..`, but retrying is harmless.
        if err not in (errno.EAGAIN, errno.EINTR):
            raise OSError(err, os.strerror(err), os.fsdecode(path))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), os.fsdecode(path))


def openat2_available() -> bool:
    """Whether the kernel (and any seccomp filter around us) lets openat2 through."""
    global _openat2
    if _openat2 is None:
        if _libc is None:
            _openat2 = False
        else:
            top = os.open("/", _DIR_FLAGS)
            try:
                os.close(_raw_openat2(top, b".", _DIR_FLAGS, 0))
                _openat2 = True
            except OSError as exc:
                # Old kernels say ENOSYS; container seccomp profiles often say EPERM.
                if exc.errno not in (errno.ENOSYS, errno.EPERM):
                    raise
                _openat2 = False
            finally:
                os.close(top)
    return _openat2


def _parts(relative: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(relative)
    if text.startswith("/"):
        raise OSError(errno.EXDEV, "an absolute path is not beneath its root", text)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EXDEV, "'..' would leave the root", text)
    return parts


def _step(dirfd: int, name: str) -> int:
    """An O_PATH fd of the directory `name` inside `dirfd`, refusing a symlink."""
    if openat2_available():
        return _raw_openat2(dirfd, os.fsencode(name), _DIR_FLAGS, 0)
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dirfd)
    except NotADirectoryError:
        # O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR; say what it really is. A link or
        # a directory there now means the entry was swapped while we looked: ELOOP as well.
        mode = os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def directory_flags() -> int:
    """Flags for a directory fd to hand to the functions here (O_PATH where there is one)."""
    return _DIR_FLAGS


def open_root(path: str | os.PathLike[str]) -> int:
    """An O_PATH fd of the directory `path`, which must be absolute and contain no symlink
    (so a root swapped for a link after it was resolved is refused too)."""
    text = os.fspath(path)
    if not text.startswith("/"):
        raise OSError(errno.EINVAL, "a root must be an absolute path", text)
    top = os.open("/", _DIR_FLAGS)
    try:
        return _dir_fd(top, _parts(text[1:]), create=False)
    finally:
        os.close(top)


def _walk(dirfd: int, parts: Iterable[str]) -> int:
    """A new fd of the existing directory `dirfd/parts...`, no symlink followed."""
    return _dir_fd(dirfd, list(parts), create=False)


@contextlib.contextmanager
def _root_fd(root: Root) -> Iterator[int]:
    if isinstance(root, int):
        yield root
        return
    fd = open_root(root)
    try:
        yield fd
    finally:
        os.close(fd)


def _dir_fd(rootfd: int, parts: list[str], *, create: bool, mode: int = 0o777) -> int:
    """A new O_PATH fd of the directory `parts` beneath `rootfd`, creating missing ones."""
    if openat2_available() and parts:
        try:
            return _raw_openat2(rootfd, os.fsencode("/".join(parts)), _DIR_FLAGS, 0)
        except FileNotFoundError:
            if not create:
                raise
    current = os.dup(rootfd)
    try:
        for name in parts:
            try:
                nxt = _step(current, name)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, mode, dir_fd=current)
                nxt = _step(current, name)
            os.close(current)
            current = nxt
    except BaseException:
        os.close(current)
        raise
    return current


def _leaf(relative: str | os.PathLike[str]) -> tuple[list[str], str]:
    parts = _parts(relative)
    if not parts:
        raise OSError(errno.EISDIR, "the root itself is not a file", os.fspath(relative))
    return parts[:-1], parts[-1]


def open_beneath(
    root: Root, relative: str | os.PathLike[str], flags: int, mode: int = 0o666
) -> int:
    """`os.open` of `root/relative` with no symlink followed at any component (ELOOP) and no
    way out of `root` (EXDEV). The caller owns the returned fd."""
    parts = _parts(relative)
    with _root_fd(root) as rootfd:
        if openat2_available():
            return _raw_openat2(rootfd, os.fsencode("/".join(parts) or "."), flags, mode)
        if not parts:
            return os.open(".", flags, mode, dir_fd=rootfd)
        parent = _walk(rootfd, parts[:-1])
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=parent)
        finally:
            os.close(parent)


def makedirs_beneath(root: Root, relative: str | os.PathLike[str], mode: int = 0o777) -> None:
    """`os.makedirs(root/relative, exist_ok=True)` without following symlinks."""
    with _root_fd(root) as rootfd:
        os.close(_dir_fd(rootfd, _parts(relative), create=True, mode=mode))


def write_beneath(
    root: Root, relative: str | os.PathLike[str], data: bytes, *, make_parents: bool = True
) -> None:
    """Write `data` to `root/relative` through a temp file renamed over it, so a failure never
    leaves half a file; an existing file's permission bits and owner are copied onto it.

    A file with other hard links, or whose owner cannot be copied, is rewritten in place
    instead, so every link sees the change and the owner stays (as editors do). Anything but a
    regular file at the target is refused (a FIFO fails with ENXIO instead of hanging the
    runner). A new file gets 0o666 less the umask.
    """
    dirs, name = _leaf(relative)
    with _root_fd(root) as rootfd:
        parent = _dir_fd(rootfd, dirs, create=make_parents)
        try:
            try:
                old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and stat.S_ISLNK(old.st_mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
            # Anything but a lone regular file goes in place (where all but a file fails).
            in_place = old is not None and (not stat.S_ISREG(old.st_mode) or old.st_nlink > 1)
            if in_place or not _replace(parent, name, data, old):
                _rewrite(parent, name, data)
        finally:
            os.close(parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _rewrite(parent: int, name: str, data: bytes) -> None:
    # O_NONBLOCK: a FIFO planted at the target fails (ENXIO) instead of hanging the runner.
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(name, flags, 0o666, dir_fd=parent)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
        os.ftruncate(fd, 0)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _replace(parent: int, name: str, data: bytes, old: os.stat_result | None) -> bool:
    """Write a temp file and rename it over `name`; False (nothing changed) when the old
    file's owner cannot be given to the new one."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    # A new file is created 0o666 so the kernel applies the umask (reading it races threads);
    # a replacement starts private and gets the old owner and bits before it becomes visible.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666 if old is None else 0o600, dir_fd=parent)
    try:
        try:
            if old is not None and not _take_over(fd, old):
                os.unlink(tmp, dir_fd=parent)
                return False
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=parent)
        raise
    return True


def _take_over(fd: int, old: os.stat_result) -> bool:
    """Give the open file `old`'s owner and permission bits; False if the owner cannot be."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)  # first: it clears set-id bits
        except PermissionError:
            return False
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    return True


def unlink_beneath(root: Root, relative: str | os.PathLike[str]) -> None:
    """Remove the file (or symlink itself) `root/relative`; a directory fails (EISDIR)."""
    dirs, name = _leaf(relative)
    with _root_fd(root) as rootfd:
        parent = _dir_fd(rootfd, dirs, create=False)
        try:
            os.unlink(name, dir_fd=parent)
        finally:
            os.close(parent)


def readlink_beneath(root: Root, relative: str | os.PathLike[str]) -> str | None:
    """What the symlink `root/relative` points to; None when there is no symlink there."""
    dirs, name = _leaf(relative)
    with _root_fd(root) as rootfd:
        try:
            parent = _dir_fd(rootfd, dirs, create=False)
        except FileNotFoundError:
            return None
        try:
            return os.readlink(name, dir_fd=parent)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # not a symlink
                return None
            raise
        finally:
            os.close(parent)


def symlink_beneath(root: Root, relative: str | os.PathLike[str], points_to: str) -> None:
    """Create the symlink `root/relative` pointing to `points_to` (which is not followed)."""
    dirs, name = _leaf(relative)
    with _root_fd(root) as rootfd:
        parent = _dir_fd(rootfd, dirs, create=True)
        try:
            os.symlink(points_to, name, dir_fd=parent)
        finally:
            os.close(parent)


def rename_beneath(
    root: Root,
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    dest_root: Root | None = None,
    make_parents: bool = True,
) -> None:
    """`os.rename(root/source, dest_root/dest)` (dest_root defaults to root), creating the
    destination's parents. Different file systems fail with EXDEV, as rename(2) does."""
    src_dirs, src_name = _leaf(source)
    dst_dirs, dst_name = _leaf(dest)
    with contextlib.ExitStack() as stack:
        src_rootfd = stack.enter_context(_root_fd(root))
        dst_rootfd = stack.enter_context(_root_fd(src_rootfd if dest_root is None else dest_root))
        src_parent = _dir_fd(src_rootfd, src_dirs, create=False)
        stack.callback(os.close, src_parent)
        dst_parent = _dir_fd(dst_rootfd, dst_dirs, create=make_parents)
        stack.callback(os.close, dst_parent)
        os.rename(src_name, dst_name, src_dir_fd=src_parent, dst_dir_fd=dst_parent)


def locate(roots: Iterable[Path], target: Path) -> tuple[Path, PurePosixPath] | None:
    """The deepest of `roots` holding `target` (by name: nothing is resolved) and `target`
    relative to it, or None. `target` is normalised lexically first."""
    normal = Path(os.path.normpath(target))
    best: Path | None = None
    for root in roots:
        if (normal == root or root in normal.parents) and (
            best is None or len(root.parts) > len(best.parts)
        ):
            best = root
    if best is None:
        return None
    return best, PurePosixPath(normal.relative_to(best))


def writable_root_of(policy: SandboxPolicy, target: Path) -> tuple[Path, PurePosixPath] | None:
    """`locate` among the policy's writable roots, realpath'd. Pass the real path to be
    written (resolve it first if symlinks in it are to be honoured): IO through the result
    follows none."""
    return locate(real_writable_roots(policy), target)
