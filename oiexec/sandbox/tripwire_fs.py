"""The tripwire's file-system side: record and put back entries beneath a directory fd.

Everything goes through directory fds opened one component at a time without following a
symlink (`beneath.py`), because the command that may have planted a symlink can still be
running while the runner, possibly as root, repairs the tree. Files are read with
`O_NOFOLLOW | O_NONBLOCK` and checked to be regular first: a FIFO or a device planted where a
hook was must not hang the runner or be read forever.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import stat
import struct
from dataclasses import dataclass

from oiexec.sandbox import beneath

_DIR_PATH = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Deeper trees than this under one watched directory are not followed further.
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Entry:
    """One watched path as it was: its kind, permissions, owner and content."""

    kind: str  # "file" | "dir" | "link" | "other"
    mode: int
    uid: int
    gid: int
    data: bytes | None = None  # a file's bytes; None when it is too large to keep
    link: str | None = None
    #: (inode, size, mtime_ns, ctime_ns): a command cannot set ctime back, so an unchanged
    #: signature means unchanged content and the bytes need not be read again.
    signature: tuple[int, ...] = ()

    def same(self, other: Entry | None) -> bool:
        if other is None or other.kind != self.kind:
            return False
        if stat.S_IMODE(self.mode) != stat.S_IMODE(other.mode):
            return False
        if self.kind == "link":
            return self.link == other.link
        if self.kind != "file":
            return True
        if self.signature and self.signature == other.signature:
            return True
        return self.data is not None and self.data == other.data


Tree = dict[str, Entry]


def split(rel: str) -> tuple[str, str]:
    head, _, name = rel.rpartition("/")
    return head or ".", name


def depth(rel: str) -> int:
    return rel.count("/")


def read_entry(
    dir_fd: int,
    name: str,
    info: os.stat_result,
    max_bytes: int,
    known: Entry | None,
    equal: tuple[int, ...] | None = None,
) -> Entry:
    """The entry `name` in `dir_fd` (already lstat'ed as `info`). `known` is the baseline's
    entry: its signature, or `equal` (one seen with its bytes since), means those bytes."""
    mode, uid, gid = info.st_mode, info.st_uid, info.st_gid
    if stat.S_ISLNK(mode):
        return Entry("link", mode, uid, gid, link=os.readlink(name, dir_fd=dir_fd))
    if stat.S_ISDIR(mode):
        return Entry("dir", mode, uid, gid)
    if not stat.S_ISREG(mode):
        return Entry("other", mode, uid, gid)
    signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    if known is not None and signature in (known.signature, equal):
        return known
    if info.st_size > max_bytes:
        return Entry("file", mode, uid, gid, None, signature=signature)
    fd = os.open(name, _FILE_READ, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the lstat
            return Entry("other", mode, uid, gid)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes and (chunk := os.read(fd, 65536)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return Entry("file", mode, uid, gid, data if size <= max_bytes else None, signature=signature)


class Scanner:
    """Collects the entries matching watch patterns beneath one base directory fd."""

    def __init__(
        self,
        base_fd: int,
        max_bytes: int,
        known: Tree | None = None,
        equal: dict[str, tuple[int, ...]] | None = None,
    ) -> None:
        self.base_fd = base_fd
        self.max_bytes = max_bytes
        self.known = known or {}
        self.equal = equal or {}
        self.found: Tree = {}

    def _record(self, dir_fd: int, name: str, rel: str) -> Entry | None:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            known, equal = self.known.get(rel), self.equal.get(rel)
            entry = read_entry(dir_fd, name, info, self.max_bytes, known, equal)
        except OSError:
            return None
        self.found[rel] = entry
        return entry

    def one(self, rel: str) -> Entry | None:
        """Record `rel` itself; an ancestor that is not a directory (a planted symlink, say)
        is recorded instead, since it is what git would follow."""
        parts = rel.split("/")
        # The base fd is the caller's (never closed here); each step below it is ours.
        current = self.base_fd
        try:
            for index, name in enumerate(parts[:-1]):
                try:
                    info = os.stat(name, dir_fd=current, follow_symlinks=False)
                except OSError:
                    return None
                if not stat.S_ISDIR(info.st_mode):
                    self._record(current, name, "/".join(parts[: index + 1]))
                    return None
                try:
                    nxt = os.open(name, _DIR_PATH | os.O_NOFOLLOW, dir_fd=current)
                except OSError:
                    return None
                if current != self.base_fd:
                    os.close(current)
                current = nxt
            return self._record(current, parts[-1], rel)
        finally:
            if current != self.base_fd:
                os.close(current)

    def tree(self, rel: str) -> None:
        """Record `rel` and, when it is a real directory, everything below it."""
        top = self.one(rel)
        if top is None or top.kind != "dir":
            return
        try:
            fd = beneath.open_beneath(self.base_fd, rel, _DIR_READ, 0)
        except OSError:
            return
        try:
            self._walk(fd, rel, 0)
        finally:
            os.close(fd)

    def _walk(self, dir_fd: int, prefix: str, level: int) -> None:
        try:
            with os.scandir(dir_fd) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError:
            return
        for name in names:
            rel = f"{prefix}/{name}"
            entry = self._record(dir_fd, name, rel)
            if entry is None or entry.kind != "dir" or level >= _MAX_DEPTH:
                continue
            try:
                sub = os.open(name, _DIR_READ, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                self._walk(sub, rel, level + 1)
            finally:
                os.close(sub)

    def children(self, rel: str) -> list[str]:
        """Names of the real directories directly in `rel` (none when it is not one)."""
        try:
            fd = beneath.open_beneath(self.base_fd, rel, _DIR_READ, 0)
        except OSError:
            return []
        try:
            with os.scandir(fd) as listing:
                return sorted(e.name for e in listing if e.is_dir(follow_symlinks=False))
        except OSError:
            return []
        finally:
            os.close(fd)


def _parent_fd(base_fd: int, rel: str, *, create: bool) -> tuple[int, str]:
    head, name = split(rel)
    if create and head != ".":
        beneath.makedirs_beneath(base_fd, head, 0o755)
    return beneath.open_beneath(base_fd, head, _DIR_PATH, 0), name


def _remove_at(parent: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        # rmtree with dir_fd is the fd-based, symlink-safe implementation.
        shutil.rmtree(name, dir_fd=parent)
    else:
        os.unlink(name, dir_fd=parent)


def remove(base_fd: int, rel: str) -> None:
    parent, name = _parent_fd(base_fd, rel, create=False)
    try:
        _remove_at(parent, name)
    finally:
        os.close(parent)


def _own(fd: int, entry: Entry) -> None:
    # Only root can give a file back to its owner; for anyone else it is theirs already.
    if os.geteuid() == 0:
        os.fchown(fd, entry.uid, entry.gid)
    os.fchmod(fd, stat.S_IMODE(entry.mode))


def put(base_fd: int, rel: str, entry: Entry) -> None:
    """Make `rel` what `entry` records (a file, directory or symlink); never follows a link."""
    parent, name = _parent_fd(base_fd, rel, create=True)
    try:
        if entry.kind == "dir":
            _put_dir(parent, name, entry)
        elif entry.kind == "link":
            assert entry.link is not None
            _remove_at(parent, name)
            os.symlink(entry.link, name, dir_fd=parent)
        elif entry.kind == "file":
            assert entry.data is not None
            _put_file(parent, name, entry)
        else:
            raise OSError(0, "a special file cannot be restored")
    finally:
        os.close(parent)


def _put_dir(parent: int, name: str, entry: Entry) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        info = None
    if info is None:
        os.mkdir(name, 0o700, dir_fd=parent)
    fd = os.open(name, _DIR_READ, dir_fd=parent)
    try:
        _own(fd, entry)
    finally:
        os.close(fd)


def _put_file(parent: int, name: str, entry: Entry) -> None:
    assert entry.data is not None
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=parent)
    tmp = f".{name}.{secrets.token_hex(4)}.oiexec-restore"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=parent)
    try:
        view = memoryview(entry.data)
        while view:
            view = view[os.write(fd, view) :]
        _own(fd, entry)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    os.close(fd)
    # rename replaces whatever is at `name` (a planted symlink included) without following it.
    os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)


_STATX_BTIME = 0x800
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_BTIME_OFFSET = 80  # struct statx: stx_btime (tv_sec, tv_nsec) at byte 80
_libc = ctypes.CDLL(None, use_errno=True)
_statx = getattr(_libc, "statx", None)


def _birth_ns(dir_fd: int, name: str) -> int:
    """Birth time in ns (0 where the file system or libc does not say)."""
    if _statx is None:
        return 0
    buf = ctypes.create_string_buffer(256)
    if _statx(dir_fd, os.fsencode(name), _AT_SYMLINK_NOFOLLOW, _STATX_BTIME, buf) != 0:
        return 0
    mask = struct.unpack_from("=I", buf, 0)[0]
    if not mask & _STATX_BTIME:
        return 0
    sec, nsec = struct.unpack_from("=qI", buf, _STATX_BTIME_OFFSET)
    return int(sec) * 1_000_000_000 + int(nsec)


Identity = tuple[int, int, int]


def identity_of(base_fd: int, name: str) -> Identity | None:
    """(device, inode, birth time) of `name`: inode numbers are reused at once, so
    `rm -rf .git; mkdir .git` can give the new directory the old number, never its birth."""
    try:
        info = os.stat(name, dir_fd=base_fd, follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino, _birth_ns(base_fd, name)


def find_identity(base_fd: int, wanted: Identity) -> str | None:
    """The name in `base_fd` with the identity `wanted`, if any."""
    try:
        fd = os.open(".", _DIR_READ, dir_fd=base_fd)
    except OSError:
        return None
    try:
        with os.scandir(fd) as listing:
            names = [item.name for item in listing]
        for name in names:
            if identity_of(fd, name) == wanted:
                return name
    finally:
        os.close(fd)
    return None


def rename_back(base_fd: int, moved: str, name: str) -> None:
    """Put the directory renamed to `moved` back at `name`, removing whatever is there."""
    _remove_at(base_fd, name)
    os.rename(moved, name, src_dir_fd=base_fd, dst_dir_fd=base_fd)
