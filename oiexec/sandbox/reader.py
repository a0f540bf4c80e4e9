"""The one reader of files the runner opens in its own process on the model's (or a
repository's) behalf: AGENTS.md, skills, the emulated harnesses' Read/Grep/Glob/LS tools,
review's look at the files a finding names.

The runner reads outside the sandbox, with its own environment (the provider key in
/proc/self/environ), its own view of /tmp and of paths a permission profile hides from
commands. What it reads must therefore be no more than a sandboxed `cat` could read, and
never something that hangs or floods it. A `ReadScope` says where reading is allowed:

- `trees` are the directories a command (or a repository's author) controls: the workspace
  and the writable roots. A path named inside one of them may follow symlinks only to a place
  inside one of them (an in-tree `docs/README -> ../README.md` is common; a link out, such as
  `AGENTS.md -> /proc/1/environ`, is refused). The file is then opened beneath the tree
  holding its real path with no symlink followed (`beneath.open_beneath`), so a link swapped
  in after the check fails instead of being followed.
- `anywhere`: other paths (system headers, the user's skills) may be read too, as commands
  can; nothing inside a tree chose them. Without it only the trees are readable.
- whatever the path: only regular files (no devices, FIFOs, sockets, directories; the open
  is non-blocking, so a FIFO cannot stall it), nothing on a kernel file system (/proc, /sys,
  ...), nothing under a profile's `deny` paths, and never more than `max_bytes` read.
- a root runner reads only what a command could: the sandbox drops root's capabilities, so
  another user's 0600 file (or one in a 0700 home) is unreadable there and refused here too
  (`_unprivileged_denial`, by the permission bits; an unprivileged runner has the kernel
  check the same credentials its commands have).

A refusal is a `ReadRefused` whose message is meant for the model.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.policy import SandboxPolicy
from oiexec.core.userfile import read_at_most
from oiexec.sandbox import beneath

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ReadRefused",
    "ReadScope",
    "check_directory",
    "judge",
    "open_directory",
    "open_file",
    "read_file",
]

#: What one in-process read returns at most unless the caller says otherwise: far above any
#: source file, far below what would hurt the runner.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
#: Kernel file systems: their "regular files" are views of kernel and process state.
_PSEUDO_FS = frozenset(
    {
        0x9FA0,  # proc
        0x62656572,  # sysfs
        0x64626720,  # debugfs
        0x74726163,  # tracefs
        0x73636673,  # securityfs
        0x27E0EB,  # cgroup
        0x63677270,  # cgroup2
        0xCAFE4A11,  # bpf
        0x62656570,  # configfs
        0xDE5E81E4,  # efivarfs
        0x6165676C,  # pstore
        0x42494E4D,  # binfmt_misc
        0xF97CFF8C,  # selinuxfs
        0x43415D53,  # smackfs
        0x65735543,  # fusectl
        0x1CD1,  # devpts
    }
)
_PSEUDO_DIRS = (Path("/proc"), Path("/sys"), Path("/dev"))

RefusalKind = Literal[
    "missing", "is_directory", "not_a_directory", "special", "outside", "denied", "too_big",
    "changed",
]  # fmt: skip


class ReadRefused(OSError):
    """The file is not read; `reason` says why, in words for the model."""

    def __init__(self, kind: RefusalKind, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.kind: RefusalKind = kind
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class ReadScope:
    """Where in-process reads may go (see the module's doc). Paths are real (symlink-free)."""

    trees: tuple[Path, ...] = ()
    anywhere: bool = True
    deny: tuple[Path, ...] = ()
    #: The permission profile the deny paths come from, for the refusal's wording.
    profile: str | None = None

    @classmethod
    def for_policy(
        cls, policy: SandboxPolicy, cwd: Path, extra_trees: Iterable[Path] = ()
    ) -> ReadScope:
        """The scope of a run's file tools: the working directory and the writable roots are
        trees; elsewhere is readable as commands may read it, less the profile's deny paths."""
        trees = [cwd, policy.cwd, *policy.writable_roots(), *extra_trees]
        return cls(
            trees=_reals(trees, existing=True),
            anywhere=True,
            deny=_reals(policy.deny_paths, existing=False),
            profile=policy.profile,
        )

    @classmethod
    def confined(cls, *roots: Path, deny: Iterable[Path] = ()) -> ReadScope:
        """Only beneath `roots` (a repository's files, nothing it links to outside)."""
        return cls(trees=_reals(roots, existing=True), anywhere=False, deny=_reals(deny, False))

    def denial(self, path: Path) -> str | None:
        """Why `path` (a real path) is hidden by the profile, or None."""
        for hidden in self.deny:
            if path == hidden or hidden in path.parents:
                name = f" `{self.profile}`" if self.profile else ""
                return f"{path} is denied by permission profile{name}; it cannot be read."
        return None


def _reals(paths: Iterable[Path], existing: bool) -> tuple[Path, ...]:
    out: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if (not existing or real.is_dir()) and real not in out:
            out.append(real)
    return tuple(out)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _pseudo_path(real: Path) -> bool:
    return any(_is_within(real, top) for top in _PSEUDO_DIRS)


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _fs_type(fd: int) -> int | None:
    """The file system magic of `fd` (Linux `fstatfs`), None where unknown."""
    if _libc is None:
        return None
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if _libc.fstatfs(ctypes.c_int(fd), buf) != 0:
        return None
    # f_type is the first field, a C long.
    return int(ctypes.c_long.from_buffer(buf).value) & 0xFFFFFFFF


@dataclass(frozen=True)
class _Resolved:
    real: Path
    #: The tree holding `real` and `real` relative to it; None: opened from "/".
    tree: Path | None


def _resolve(scope: ReadScope, path: Path) -> _Resolved:
    """Judge `path` by name: where it leads and whether the scope lets it be read there."""
    named = Path(os.path.normpath(path))
    real = Path(os.path.realpath(path))
    named_in = beneath.locate(scope.trees, named)
    real_in = beneath.locate(scope.trees, real)
    if real_in is None:
        if named_in is not None:
            raise ReadRefused(
                "outside",
                path,
                f"{path} is a symbolic link (or passes through one) leading to {real}, outside "
                "the workspace and writable roots; links out of them are not followed.",
            )
        if not scope.anywhere:
            raise ReadRefused("outside", path, f"{path} is outside the directories read here.")
    if _pseudo_path(real):
        raise ReadRefused(
            "special",
            path,
            f"{path} is on a kernel file system (/proc, /sys or /dev); the file tools read "
            "regular files only.",
        )
    for candidate in (named, real):
        reason = scope.denial(candidate)
        if reason is not None:
            raise ReadRefused("denied", path, reason)
    return _Resolved(real, real_in[0] if real_in is not None else None)


def _open(path: Path, where: _Resolved, flags: int) -> int:
    if where.tree is not None:
        relative = where.real.relative_to(where.tree)
        root: beneath.Root = where.tree
    else:
        relative = where.real.relative_to("/")
        root = "/"
    try:
        return beneath.open_beneath(root, str(relative), flags)
    except FileNotFoundError:
        raise ReadRefused("missing", path, f"File does not exist: {path}") from None
    except OSError as exc:
        if beneath.changed_under_us(exc):
            raise ReadRefused(
                "changed",
                path,
                f"{path} changed while being opened (a symbolic link appeared on its way); "
                "nothing was read.",
            ) from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            raise _special(path) from None
        raise


def _special(path: Path) -> ReadRefused:
    return ReadRefused(
        "special",
        path,
        f"{path} is not a regular file (a device, FIFO or socket); the file tools read regular "
        "files only.",
    )


def _may(info: os.stat_result, bits: tuple[int, int, int], groups: set[int]) -> bool:
    """Whether the permission bits let this uid (without privilege) do `bits`' action."""
    owner, group, other = bits
    if info.st_uid == os.geteuid():
        return bool(info.st_mode & owner)
    if info.st_gid in groups:
        return bool(info.st_mode & group)
    return bool(info.st_mode & other)


_READ_BITS = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)
_SEARCH_BITS = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)


def _unprivileged_denial(path: Path, real: Path, info: os.stat_result) -> ReadRefused | None:
    """For a root runner: a refusal when a command (root without capabilities, in the
    sandbox) could not read `real`, or reach it through its directories."""
    if os.geteuid() != 0:
        return None  # the kernel already checks this process as it checks its commands
    groups = {os.getegid(), *os.getgroups()}
    blocked: Path | None = None
    if not _may(info, _READ_BITS, groups):
        blocked = real
    else:
        for parent in real.parents:
            try:
                if not _may(os.stat(parent), _SEARCH_BITS, groups):
                    blocked = parent
                    break
            except OSError:
                blocked = parent
                break
    if blocked is None:
        return None
    return ReadRefused(
        "denied",
        path,
        f"{path} cannot be read: commands in the sandbox have no permission on {blocked} "
        "(root's privileges are dropped there), and the file tools read only what they can.",
    )


def _check_fd(path: Path, fd: int, *, directory: bool) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode) and not directory:
        raise ReadRefused("is_directory", path, f"{path} is a directory, not a file.")
    if directory and not stat.S_ISDIR(info.st_mode):
        raise ReadRefused("not_a_directory", path, f"{path} is not a directory.")
    if not directory and not stat.S_ISREG(info.st_mode):
        raise _special(path)
    if _fs_type(fd) in _PSEUDO_FS:
        raise ReadRefused(
            "special", path, f"{path} is on a kernel file system; it cannot be read here."
        )
    return info


@contextlib.contextmanager
def open_file(scope: ReadScope, path: Path) -> Iterator[tuple[int, os.stat_result]]:
    """An fd of the regular file `path` as the scope allows it, and its `fstat`."""
    where = _resolve(scope, path)
    try:
        info = os.stat(where.real, follow_symlinks=False)
    except FileNotFoundError:
        raise ReadRefused("missing", path, f"File does not exist: {path}") from None
    # Judged before opening: opening a device can have effects of its own (a tape rewinds).
    if stat.S_ISDIR(info.st_mode):
        raise ReadRefused("is_directory", path, f"{path} is a directory, not a file.")
    if not stat.S_ISREG(info.st_mode):
        raise _special(path)
    fd = _open(path, where, _READ_FLAGS)
    try:
        checked = _check_fd(path, fd, directory=False)
        refusal = _unprivileged_denial(path, where.real, checked)
        if refusal is not None:
            raise refusal
        yield fd, checked
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileData:
    """What `read_file` read: `data` is the whole file unless `truncated`."""

    data: bytes
    size: int
    truncated: bool


def read_file(
    scope: ReadScope,
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    truncate: bool = False,
) -> FileData:
    """The bytes of `path`, at most `max_bytes` of them. A bigger file is refused
    (`too_big`), or with `truncate` its first `max_bytes` are returned."""
    with open_file(scope, path) as (fd, info):
        if info.st_size > max_bytes and not truncate:
            raise _too_big(path, info.st_size, max_bytes)
        os.set_blocking(fd, True)
        data = read_at_most(fd, max_bytes)  # one byte more tells a file that grew past the cap
    if len(data) > max_bytes:
        if not truncate:
            raise _too_big(path, max(info.st_size, len(data)), max_bytes)
        return FileData(data[:max_bytes], max(info.st_size, len(data)), True)
    return FileData(data, max(info.st_size, len(data)), False)


def _too_big(path: Path, size: int, cap: int) -> ReadRefused:
    return ReadRefused(
        "too_big",
        path,
        f"{path} is {size} bytes, more than the {cap} bytes a file tool reads at once; use "
        "the shell (head, tail, sed -n, grep) to read parts of it.",
    )


@contextlib.contextmanager
def open_directory(scope: ReadScope, path: Path) -> Iterator[int]:
    """A search-only (O_PATH) fd of the directory `path` as the scope allows it: a program
    the runner starts on it (ripgrep) gets the fd, never the name, which a link swapped in
    could send elsewhere."""
    where = _resolve(scope, path)
    fd = _open(path, where, beneath.directory_flags())
    try:
        info = _check_fd(path, fd, directory=True)
        refusal = _unprivileged_denial(path, where.real, info)
        if refusal is not None:
            raise refusal
        yield fd
    finally:
        os.close(fd)


def check_directory(scope: ReadScope, path: Path) -> Path:
    """The real path of the directory `path` if the scope allows listing it."""
    with open_directory(scope, path):
        return Path(os.path.realpath(path))


def judge(scope: ReadScope, path: Path) -> Path:
    """The real path of `path` if the scope allows reading there (nothing is opened)."""
    return _resolve(scope, path).real
