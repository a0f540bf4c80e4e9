"""Temp directories of one run, named so that a later run can tell when their owner is dead.

A runner that is SIGKILLed (OOM killer, CI timeout) cannot remove what it made in the temp dir:
the private /tmp of its bwrap sandbox, the saved outputs, the background tasks' files, the
diff's index and object store. `make` names each `<prefix><pid>.<start>.<host>-<random>`:
the runner's pid, its start time (clock ticks after boot, so a reused pid does not pass for
it) and a tag of the boot and PID namespace (a pid means nothing in another one). `sweep`,
called when a run starts, removes such directories whose owner is gone, and nothing else:

* only names with a known prefix and our own tag, directly in the temp dir;
* only directories (never a symlink: `lstat`) owned by our euid;
* never one whose owner pid is alive with the recorded start time: runs may be concurrent;
* removed through directory descriptors opened with O_NOFOLLOW, so a symlink planted inside
  (a shared /tmp is writable by sandboxed commands of the same user) is unlinked, never
  followed; directories a command made unreadable are opened up first (we own them).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

#: Every prefix `make` is used with (so `sweep` knows them all).
PREFIXES = (
    "oiexec-tmp-",
    "oiexec-output-",
    "oiexec-tasks-",
    "oiexec-diff-",
    "oiexec-net-",
)
_NAME = re.compile(r"(?P<pid>\d+)\.(?P<start>\d+)\.(?P<tag>[0-9a-f]{8})-[A-Za-z0-9_]+")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _start_time(pid: int | str) -> int | None:
    """Field 22 of /proc/<pid>/stat (None: no such process, or no procfs)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def _tag() -> str:
    """Boot id and PID namespace: where a (pid, start time) pair means one process."""
    parts = []
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]


def owner_stamp() -> str:
    """`<pid>.<start>.<tag>` of this process (start 0 without procfs)."""
    return f"{os.getpid()}.{_start_time('self') or 0}.{_tag()}"


def make(prefix: str) -> Path:
    """A new 0700 directory in the temp dir, owned by this run (see the module doc)."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown run directory prefix {prefix!r}")
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_stamp()}-"))


def _owner_alive(pid: int, start: int) -> bool:
    now = _start_time(pid)
    if now is not None:
        return start == 0 or now == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    # Alive, but no procfs to compare start times: keep it (at worst a leftover stays).
    return True


def stale(name: str) -> bool:
    """Whether `name` is a run directory of ours (by name) whose owner is gone."""
    prefix = next((p for p in PREFIXES if name.startswith(p)), None)
    if prefix is None:
        return False
    return owner_gone(name[len(prefix) :])


def owner_gone(stamped: str) -> bool:
    """Whether `stamped` (`<owner_stamp()>-<anything>`) names a process of this host and PID
    namespace that is no longer running. Unknown forms, and other namespaces, are not gone."""
    found = _NAME.fullmatch(stamped)
    if found is None or found["tag"] != _tag():
        return False
    pid, start = int(found["pid"]), int(found["start"])
    if pid == os.getpid():
        return False
    return not _owner_alive(pid, start)


def sweep(where: Path | None = None) -> list[str]:
    """Remove the run directories of dead runners in `where` (default: the temp dir);
    returns the names removed. Never raises: a leftover is not worth failing a run."""
    removed: list[str] = []
    base = Path(where) if where is not None else Path(tempfile.gettempdir())
    try:
        parent = os.open(base, _DIR_FLAGS)
    except OSError:
        return removed
    try:
        for name in os.listdir(parent):
            if not stale(name):
                continue
            # A tree too deep to walk (RecursionError) stays, like any other failure.
            with contextlib.suppress(OSError, RecursionError):
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
                    remove_tree(parent, name)
                    removed.append(name)
    finally:
        os.close(parent)
    return removed


def remove_tree(parent: int, name: str) -> None:
    """Remove `name` in the directory `parent` (a descriptor) and all under it, following
    no symlink. Raises OSError if something could not be removed."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        info = os.fstat(fd)
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) | 0o700)
        for entry in os.listdir(fd):
            try:
                child = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(child.st_mode):
                remove_tree(fd, entry)
            else:
                os.unlink(entry, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def remove(path: Path) -> None:
    """Remove the run directory `path` as `remove_tree` does; what cannot be removed stays."""
    try:
        parent = os.open(path.parent, _DIR_FLAGS)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError, RecursionError):
            remove_tree(parent, path.name)
    finally:
        os.close(parent)
