"""Guard directories: what keeps a missing protected name from being created in a bound root.

A missing `.openinterpreter` (or `.git`, `.agents`, `.codex`) in the workspace or another
bound writable root can only be made uncreatable by mounting something read-only on it, and
the mount point must exist on the host. We make it (an empty dir, the *guard*) and bwrap
mounts an empty read-only tmpfs on it. (/tmp and $TMPDIR need none: they are private,
privtmp.py.)

Why a guard belongs to the run and is reference counted across processes: when a mount
point is removed on the host, Linux lazily detaches the mounts on it in *every* other mount
namespace. If one command's cleanup removed a guard while another sandbox still relied on it
(a background command of the same run, or another runner process in the same workspace),
that sandbox could create the protected name on the host after all. So:

* every protected path a sandbox mounts on inside a bound root is *held*: a shared `flock`
  on a per-path lock file, taken before the path is looked at and kept from the first command
  that needs it until the sandbox closes (the end of the run). A path a command saw existing
  is therefore one its run holds, whoever made it;
* a guard is removed only at close, only when an exclusive lock proves nobody else (in any
  process) holds it, only if it is still the empty directory that was made as a guard (same
  device and inode, recorded in the lock file), and never through a symlink.

The lock files live in a 0700 per-uid directory outside every bound root, so no sandboxed
command can touch them. A SIGKILLed runner leaves its guards and lock files behind; the next
run holding the same path removes the guard at its close, since the lock file still names it.

A protected name that is a symlink is protected at its target (mounts follow links): an
existing target is bound read-only; a missing one inside a bound root gets a guard at the
first missing component. The link itself cannot be mounted on, so a command could replace
it; `restore_links` puts every link of the chain back after each command.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from oiexec.core.errors import SandboxUnavailable
from oiexec.core.links import resolve

#: How long to wait for a lock another process holds exclusively (only ever briefly).
LOCK_TIMEOUT_S = 10.0


class GuardError(SandboxUnavailable):
    """A guard could not be held safely: the command must not run unprotected."""


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _within_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(_within(path, r) for r in roots)


@dataclass(frozen=True)
class Protection:
    """How one protected name is kept read-only inside the sandbox."""

    #: The real path to mount read-only on (None: nothing to mount, it cannot be written).
    mount: Path | None
    #: `mount` does not exist yet: a guard dir has to be made there.
    guard: bool = False
    #: `mount` lies in a bound writable root: the run must hold it while it is mounted.
    held: bool = False
    #: Symlinks met on the way, inside bound roots, with their targets (restored if changed).
    links: tuple[tuple[Path, str], ...] = ()


def _first_missing(path: Path) -> Path | None:
    """The first component of the resolved `path` that does not exist."""
    for candidate in (*reversed(path.parents), path):
        if not os.path.lexists(candidate):
            return candidate
    return None


def creatable_in(directory: Path) -> bool:
    """Whether a sandboxed command could create an entry in `directory`.

    Not `os.access`: root passes it through CAP_DAC_OVERRIDE, which it lacks inside bwrap's
    user namespace. The owner counts as able (it can `chmod u+w` first), and so does any
    directory with an ACL (its bits do not tell the whole story).
    """
    try:
        info = directory.stat()
    except OSError:
        return False
    if info.st_uid == os.geteuid():
        return True
    if info.st_gid in (os.getegid(), *os.getgroups()) and info.st_mode & stat.S_IWGRP:
        return True
    if info.st_mode & stat.S_IWOTH:
        return True
    try:
        os.getxattr(directory, "system.posix_acl_access")
    except OSError:
        return False
    return True


def plan(root: Path, name: str, bound: Sequence[Path], private: Sequence[Path]) -> Protection:
    """How to protect `root/name` (pure: looks, changes nothing).

    `bound` are the writable roots bound from the host, `private` the private temp roots (a
    link into those resolves, inside the sandbox, to the run's private dir, not the host's).
    """
    path = root / name
    if not path.is_symlink():
        if os.path.lexists(path):
            return Protection(path, held=True)
        return Protection(path, guard=True, held=True) if creatable_in(root) else Protection(None)
    target, chain, broken = resolve(path)
    links = tuple((p, t) for p, t in chain if _within_any(p.parent, bound))
    if broken:
        return Protection(None, links=links)
    if os.path.lexists(target):
        return Protection(target, held=_within_any(target, bound), links=links)
    missing = _first_missing(target)
    # Inside the sandbox the deepest root holding it decides (a workspace under /tmp is bound
    # on top of the private /tmp): outside every root it cannot be created, in a private one
    # only privately.
    holder = max(
        (r for r in (*bound, *private) if missing is not None and _within(missing, r)),
        key=lambda r: len(r.parts),
        default=None,
    )
    if missing is None or holder not in bound or not creatable_in(missing.parent):
        return Protection(None, links=links)
    return Protection(missing, guard=True, held=True, links=links)


def _lock_dir_candidates() -> list[Path]:
    uid = os.geteuid()
    # Fixed places, not $XDG_RUNTIME_DIR: every runner of this uid must agree on the dir.
    return [
        Path(f"/run/oiexec-guards-{uid}"),
        Path(f"/run/user/{uid}/oiexec-guards"),
        Path(f"/tmp/oiexec-guards-{uid}"),
        Path(f"/dev/shm/oiexec-guards-{uid}"),
    ]


def _usable_lock_dir(path: Path, avoid: Sequence[Path]) -> bool:
    with contextlib.suppress(FileExistsError, OSError):
        path.mkdir(mode=0o700)
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False  # a planted dir or link: another user could drop our locks
    if info.st_mode & 0o077:
        try:
            os.chmod(path, 0o700, follow_symlinks=False)
        except OSError:
            return False
    # A sandboxed command must not be able to delete lock files (it would break the count).
    return not _within_any(Path(os.path.realpath(path)), avoid)


def lock_dir(avoid: Sequence[Path]) -> Path:
    for candidate in _lock_dir_candidates():
        if _usable_lock_dir(candidate, avoid):
            return candidate
    raise GuardError(
        "sandbox unavailable: no private directory for guard locks (tried "
        + ", ".join(str(c) for c in _lock_dir_candidates())
        + "); protected names could not be kept uncreatable, so the command was not run"
    )


@dataclass
class _Held:
    path: Path
    lock: Path
    fd: int


def _identity(info: os.stat_result) -> bytes:
    return f"{info.st_dev}:{info.st_ino}\n".encode()


def _with_owner_write(parent: Path, path: Path, action: str) -> None:
    """`mkdir`/`rmdir` `path` in `parent`, lending ourselves `u+w` on a parent we own but made
    read-only (a command could do the same with chmod, so it must be guarded anyway)."""
    call = os.mkdir if action == "mkdir" else os.rmdir
    try:
        call(path)
        return
    except PermissionError:
        info = parent.stat()
        if info.st_uid != os.geteuid():
            raise
    mode = stat.S_IMODE(info.st_mode)
    os.chmod(parent, mode | stat.S_IWUSR | stat.S_IXUSR)
    try:
        call(path)
    finally:
        os.chmod(parent, mode)


@dataclass
class Guards:
    """The protected paths one sandbox (one run) holds, and the guards it made."""

    #: Bound writable roots: where the lock dir must not be.
    avoid: Sequence[Path] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _dir: Path | None = None
    _held: dict[Path, _Held] = field(default_factory=dict)
    #: Each link's target as first seen in this run: a command that swaps a link before the
    #: next command starts must not have its version "restored".
    _links: dict[Path, str] = field(default_factory=dict)

    def protect(
        self, root: Path, name: str, bound: Sequence[Path], private: Sequence[Path]
    ) -> Protection:
        """Hold the path that protects `root/name` and make its guard if it is missing."""
        with self._lock:
            for _ in range(8):
                found = plan(root, name, bound, private)
                if found.mount is None or not found.held or found.mount in self._held:
                    break
                # Hold first, then look again: what we saw may have been removed meanwhile.
                self._hold(found.mount, bound)
            else:
                raise GuardError(f"sandbox unavailable: {root / name} keeps changing")
            found = replace(
                found, links=tuple((p, self._links.setdefault(p, t)) for p, t in found.links)
            )
            if found.guard and found.mount is not None and not self._make(found.mount):
                return replace(found, mount=None, guard=False)
            return found

    def _hold(self, path: Path, bound: Sequence[Path]) -> None:
        if self._dir is None:
            self._dir = lock_dir([*self.avoid, *bound])
        key = hashlib.sha256(os.fsencode(str(path))).hexdigest()[:40]
        lock = self._dir / f"{key}.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while time.monotonic() < deadline:
            fd = os.open(lock, flags, 0o600)
            try:
                # Not a blocking wait: whoever holds it exclusively should be done in
                # microseconds, and a stuck holder must not hang this run.
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                time.sleep(0.005)
                continue
            # A closing holder may have unlinked the file while we waited: retry on the new.
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False)):
                    self._held[path] = _Held(path, lock, fd)
                    return
            os.close(fd)
        raise GuardError(f"sandbox unavailable: cannot lock the guard of {path} ({lock})")

    @property
    def lock_dir(self) -> Path | None:
        """The lock dir once a path is held; sandboxes get it hidden (no flock games)."""
        return self._dir

    def _make(self, path: Path) -> bool:
        """Create the guard `path` (held); False when nothing can be created there."""
        try:
            _with_owner_write(path.parent, path, "mkdir")
        except FileExistsError:
            return True  # someone else's guard (held now) or the user's own
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                return False  # not creatable by us, so not by the sandbox either
            raise GuardError(f"sandbox unavailable: cannot make the guard {path}: {exc}") from exc
        held = self._held[path]
        data = _identity(os.lstat(path))
        os.pwrite(held.fd, data, 0)
        os.ftruncate(held.fd, len(data))
        return True

    def close(self) -> None:
        """Let go of everything; remove the guards nobody else holds (idempotent)."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for item in held:
            try:
                fcntl.flock(item.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(item.fd)  # another sandbox still holds it: it removes it later
                continue
            try:
                _remove_guard(item)
            finally:
                os.close(item.fd)


def _remove_guard(item: _Held) -> None:
    """Under the exclusive lock: rmdir the guard if it still is one, then drop the lock file."""
    marker = os.pread(item.fd, 64, 0)
    with contextlib.suppress(OSError):
        info = os.lstat(item.path)
        # Only the very directory made as a guard, only when empty (rmdir refuses otherwise).
        if marker and stat.S_ISDIR(info.st_mode) and _identity(info) == marker:
            _with_owner_write(item.path.parent, item.path, "rmdir")
    with contextlib.suppress(OSError):
        if os.path.samestat(os.fstat(item.fd), os.stat(item.lock, follow_symlinks=False)):
            os.unlink(item.lock)


def restore_links(watched: Sequence[tuple[Path, str]]) -> list[str]:
    """Put back protected symlinks (and links on their way) that a command replaced."""
    notes: list[str] = []
    for link, target in watched:
        with contextlib.suppress(OSError):
            if os.readlink(link) == target:
                continue
        try:
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            elif os.path.lexists(link):
                link.unlink()
            os.symlink(target, link)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if os.readlink(link) == target:
                    continue  # another command's cleanup put it back at the same time
            notes.append(f"sandbox: {link} (protected) was replaced, not restorable: {exc}")
            continue
        notes.append(f"sandbox: {link} (protected) was replaced by the command and is restored")
    return notes
