"""Guard protected paths where the backend cannot make them read-only (Landlock).

Before a command: snapshot the watched paths (`[tripwire] watch` in policy.toml) of every
writable root and of git dirs behind `.git` files. After it: anything changed, added or
removed is put back, and each repair becomes a note for the model.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from oiexec.sandbox import profiles
from oiexec.sandbox.base import SandboxPolicy
from oiexec.sandbox.paths import PROTECTED_NAMES, protected_gitdirs, real_writable_roots


@dataclass(frozen=True)
class _Entry:
    mode: int
    data: bytes | None  # None for directories, or files too big to restore
    link: str | None = None
    #: (inode, size, mtime_ns, ctime_ns): ctime cannot be set back by the command, so an
    #: unchanged signature means unchanged content and the bytes need not be read again.
    signature: tuple[int, ...] = ()

    def same(self, other: _Entry | None) -> bool:
        if other is None:
            return False
        if self.signature and self.signature == other.signature:
            return True
        return (self.mode, self.data, self.link) == (other.mode, other.data, other.link)


Snapshot = dict[Path, _Entry]


def _watch_patterns() -> list[str]:
    return [str(p) for p in profiles.policy_data()["tripwire"]["watch"]]


def _max_bytes() -> int:
    return int(profiles.policy_data()["tripwire"]["max_restore_bytes"])


def _expand(base: Path, pattern: str) -> list[Path]:
    if pattern.endswith("/**"):
        top = base / pattern.removesuffix("/**")
        if top.is_symlink() or not top.is_dir():
            return [top] if top.is_symlink() or top.exists() else []
        found = [top]
        for dirpath, dirnames, filenames in os.walk(top):
            found += [Path(dirpath) / n for n in (*dirnames, *filenames)]
        return found
    path = base / pattern
    return [path] if path.is_symlink() or path.exists() else []


_content_cache: dict[tuple[Path, tuple[int, ...]], bytes] = {}


def _read(path: Path) -> _Entry:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return _Entry(info.st_mode, None, os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return _Entry(info.st_mode, None)
    if info.st_size > _max_bytes():
        return _Entry(info.st_mode, b"\0too-big")
    signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    key = (path, signature)
    if key not in _content_cache:
        if len(_content_cache) > 4096:
            _content_cache.clear()
        _content_cache[key] = path.read_bytes()
    return _Entry(info.st_mode, _content_cache[key], None, signature)


class Tripwire:
    def __init__(self, policy: SandboxPolicy) -> None:
        self._bases: list[Path] = real_writable_roots(policy)
        self._gitdirs = protected_gitdirs(policy)

    def _watched(self) -> list[Path]:
        found: list[Path] = []
        for base in self._bases:
            for pattern in _watch_patterns():
                found += _expand(base, pattern)
            # A protected name that appears from nothing is caught by its absence before.
            found += [base / n for n in PROTECTED_NAMES if (base / n).is_symlink()]
        for gitdir in self._gitdirs:
            for pattern in ("config", "hooks/**", "info/**"):
                found += _expand(gitdir, pattern)
        return found

    def identities(self) -> dict[Path, tuple[int, int]]:
        """(device, inode) of each existing protected name, to notice a rename."""
        found: dict[Path, tuple[int, int]] = {}
        for base in self._bases:
            for name in PROTECTED_NAMES:
                with contextlib.suppress(OSError):
                    info = (base / name).lstat()
                    found[base / name] = (info.st_dev, info.st_ino)
        return found

    def snapshot(self) -> Snapshot:
        snap: Snapshot = {}
        for path in self._watched():
            with contextlib.suppress(OSError):
                snap[path] = _read(path)
        for base in self._bases:
            for name in PROTECTED_NAMES:
                path = base / name
                if path not in snap and (path.exists() or path.is_symlink()):
                    with contextlib.suppress(OSError):
                        snap[path] = _read(path)
        return snap

    def restore(self, before: Snapshot, ids: dict[Path, tuple[int, int]]) -> list[str]:
        """Undo changes since `before`; one note per repaired path."""
        notes = self._undo_renames(ids)
        after = self.snapshot()
        missing_names = [
            base / n for base in self._bases for n in PROTECTED_NAMES if (base / n) not in before
        ]
        for path in missing_names:
            if path.exists() or path.is_symlink():
                _remove(path)
                notes.append(f"{path} was created by the command and has been removed")
        for path in sorted(set(after) - set(before), key=lambda p: -len(p.parts)):
            if any(path == m or m in path.parents for m in missing_names):
                continue
            _remove(path)
            notes.append(f"{path} was created by the command and has been removed")
        for path in sorted(before, key=lambda p: len(p.parts)):
            entry = before[path]
            if entry.same(after.get(path)):
                continue
            if entry.data == b"\0too-big":
                notes.append(f"{path} changed and is too large to restore")
                continue
            _put(path, entry)
            notes.append(f"{path} was modified by the command and has been restored")
        return [f"sandbox tripwire: {n} (protected path)" for n in notes]

    def _undo_renames(self, ids: dict[Path, tuple[int, int]]) -> list[str]:
        notes: list[str] = []
        for path, identity in ids.items():
            with contextlib.suppress(OSError):
                info = path.lstat()
                if (info.st_dev, info.st_ino) == identity:
                    continue
            moved = _find_by_identity(path.parent, identity)
            if moved is None:
                notes.append(f"{path} was moved or deleted and could not be put back")
                continue
            if path.exists() or path.is_symlink():
                _remove(path)
            with contextlib.suppress(OSError):
                os.rename(moved, path)
                notes.append(
                    f"{path} was renamed to {moved} by the command and has been moved back"
                )
        return notes


def _find_by_identity(directory: Path, identity: tuple[int, int]) -> Path | None:
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            info = entry.stat(follow_symlinks=False)
            if (info.st_dev, info.st_ino) == identity:
                return Path(entry.path)
    return None


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _put(path: Path, entry: _Entry) -> None:
    with contextlib.suppress(OSError):
        if entry.link is not None:
            _remove(path)
            os.symlink(entry.link, path)
        elif entry.data is None:
            if not path.is_dir() or path.is_symlink():
                _remove(path)
            path.mkdir(parents=True, exist_ok=True)
            os.chmod(path, stat.S_IMODE(entry.mode))
        else:
            if path.is_dir() and not path.is_symlink():
                _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            # Replace rather than write through: the file could now be a symlink.
            tmp = path.with_name(f".{path.name}.oiexec-restore")
            tmp.write_bytes(entry.data)
            os.chmod(tmp, stat.S_IMODE(entry.mode))
            os.replace(tmp, path)
