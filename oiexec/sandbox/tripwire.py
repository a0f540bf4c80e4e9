"""Guard protected paths where the backend cannot make them read-only (Landlock).

One baseline per run, taken when the sandbox is made: the watched paths of every writable
root (`[tripwire] watch` in policy.toml) and of every git dir git would use for it (the
workspace's `.git`, the git dir and common dir behind a `.git` file or `.git/commondir`, and
each submodule and worktree git dir below them: `[tripwire] git_dir_watch`). After every
command, and when the sandbox closes, everything is put back to that baseline: what a command
added is removed, what it changed or deleted is restored, and each repair becomes a note for
the model. Restoring to the run's baseline rather than to a snapshot taken when the command
started means overlapping commands cannot launder each other's writes.

What this cannot do: git history itself (objects, refs, the index) is not copied. A deleted
or replaced `.git` is reported with the HEAD and branches it had, never recreated.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import beneath, profiles
from oiexec.sandbox import tripwire_fs as fs
from oiexec.sandbox.paths import PROTECTED_NAMES, real_writable_roots, resolve_gitdirs

_NOTE = "sandbox tripwire: {} (protected path)"
#: What the notes say about history under Landlock (also for the doctor and the README).
HISTORY_LIMIT = (
    "the Landlock backend cannot protect git history: objects, refs and the index can be "
    "changed or deleted by a command and are not restored (only config, hooks, info/, "
    "alternates and the other files git runs or is redirected by are)"
)


def _settings() -> tuple[list[str], list[str], int]:
    data = profiles.policy_data()["tripwire"]
    watch = [str(p) for p in data["watch"]]
    # Every protected name but `.git` (whose git dirs are watched below) is watched whole,
    # even if the policy file forgets one.
    watch += [f"{n}/**" for n in PROTECTED_NAMES if n != ".git" and f"{n}/**" not in watch]
    return watch, [str(p) for p in data["git_dir_watch"]], int(data["max_restore_bytes"])


@dataclass
class _Base:
    """A directory whose watched entries are kept at their baseline."""

    path: Path
    git: bool  # a git dir (git_dir_watch, submodules, worktrees) or a writable root (watch)
    baseline: fs.Tree = field(default_factory=dict)
    #: Signatures seen with the baseline's bytes since, so those need not be read again.
    equal: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass
class _GitHome:
    """A writable root whose `.git` was a directory: its identity and its history."""

    root: Path
    identity: fs.Identity
    history: str
    #: The commit HEAD resolved to (None: unborn or unreadable).
    head: str | None
    #: The loss of history has been reported (once per run).
    reported: bool = False
    #: No `.git` directory there in this pass (nothing to restore into).
    gone: bool = False


def _git_dirs(root: Path) -> list[Path]:
    """The git dirs git would use for `root` (each real, so `open_root` accepts it)."""
    git = root / ".git"
    if git.is_symlink():
        target = Path(os.path.realpath(git))
        found = [target] if target.is_dir() else []
    elif git.is_dir():
        found = [git]
    else:
        found = resolve_gitdirs(git)
    for gitdir in list(found):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = (gitdir / "commondir").read_text(encoding="utf-8").strip()
            common = Path(os.path.realpath(gitdir / text))
            if common.is_dir() and common not in found:
                found.append(common)
    return found


def _read_ref(gitdir: Path, ref: str) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return (gitdir / ref).read_text(encoding="utf-8").strip() or None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (gitdir / "packed-refs").read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None


def describe_history(gitdir: Path) -> str:
    """HEAD and the local branches of `gitdir`, read from files (never by running git)."""
    try:
        head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return "no readable HEAD"
    branches: dict[str, str] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (gitdir / "packed-refs").read_text(encoding="utf-8").splitlines():
            packed_sha, _, packed = line.partition(" ")
            if packed.startswith("refs/heads/"):
                branches[packed.removeprefix("refs/heads/")] = packed_sha
    heads = gitdir / "refs" / "heads"
    for dirpath, _, files in os.walk(heads):
        for file in files:
            ref_path = Path(dirpath, file)
            loose = _read_ref(gitdir, str(ref_path.relative_to(gitdir)))
            if loose:
                branches[str(ref_path.relative_to(heads))] = loose
    if head.startswith("ref: "):
        ref = head.removeprefix("ref: ")
        where = f"HEAD was {_read_ref(gitdir, ref) or 'unborn'} on {ref}"
    else:
        where = f"HEAD was {head} (detached)"
    listed = ", ".join(f"{n}={s[:12]}" for n, s in sorted(branches.items())[:20])
    more = f" and {len(branches) - 20} more" if len(branches) > 20 else ""
    return f"{where}; branches: {listed or 'none'}{more}"


def _head_commit(root: Path) -> str | None:
    try:
        fd = beneath.open_root(root)
    except OSError:
        return None
    try:
        return _head_commit_at(fd)
    finally:
        os.close(fd)


def _head_commit_at(root_fd: int) -> str | None:
    """The commit `.git/HEAD` resolves to, read without following links or blocking on a
    FIFO (the command may have planted either)."""
    scanner = fs.Scanner(root_fd, 4096)

    def text(rel: str) -> str:
        entry = scanner.one(rel)
        data = entry.data if entry is not None and entry.kind == "file" else None
        return (data or b"").decode("utf-8", "replace").strip()

    head = text(".git/HEAD")
    if not head.startswith("ref: "):
        return head or None
    ref = head.removeprefix("ref: ")
    if ".." in ref.split("/"):
        return None
    loose = text(f".git/{ref}")
    if loose:
        return loose
    for line in text(".git/packed-refs").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def _identity(root: Path) -> fs.Identity | None:
    try:
        fd = beneath.open_root(root)
    except OSError:
        return None
    try:
        return fs.identity_of(fd, ".git")
    finally:
        os.close(fd)


class Tripwire:
    def __init__(self, policy: SandboxPolicy) -> None:
        self._watch, self._git_watch, self._max = _settings()
        self._lock = threading.Lock()
        self._bases: list[_Base] = []
        self._homes: list[_GitHome] = []
        for root in real_writable_roots(policy):
            self._bases.append(_Base(root, git=False))
            gitdirs = _git_dirs(root)
            git = root / ".git"
            if git.is_dir() and not git.is_symlink():
                identity = _identity(root)
                if identity is not None:
                    history = describe_history(git)
                    self._homes.append(_GitHome(root, identity, history, _head_commit(root)))
            for gitdir in gitdirs:
                if all(b.path != gitdir for b in self._bases):
                    self._bases.append(_Base(gitdir, git=True))
        for base in self._bases:
            base.baseline = self._scan(base) or {}

    # --- scanning -----------------------------------------------------------------------

    def _patterns(self, base: _Base) -> list[str]:
        if base.git:
            return self._git_watch
        # A `.git` directory is handled by identity (it cannot be recreated); any other `.git`
        # (a file pointing elsewhere, a symlink, or one that appears) is an ordinary entry.
        homes = {h.root for h in self._homes}
        return self._watch if base.path in homes else [*self._watch, ".git"]

    def _scan(self, base: _Base) -> fs.Tree | None:
        """The watched entries of `base` now; None when the base itself is gone."""
        try:
            fd = beneath.open_root(base.path)
        except OSError:
            return None
        try:
            scanner = fs.Scanner(fd, self._max)
            self._collect(scanner, base, "")
            return scanner.found
        finally:
            os.close(fd)

    def _collect(self, scanner: fs.Scanner, base: _Base, prefix: str) -> None:
        for pattern in self._patterns(base):
            rel = prefix + pattern
            if rel.endswith("/**"):
                scanner.tree(rel.removesuffix("/**"))
            else:
                scanner.one(rel)
        if not base.git:
            return
        # Submodule git dirs (`modules/<path>`, nested) and linked worktrees' git dirs.
        for nested in ("modules", "worktrees"):
            top = f"{prefix}{nested}"
            scanner.one(top)
            for sub in self._nested_gitdirs(scanner, top, nested == "modules"):
                self._collect(scanner, base, f"{sub}/")

    def _nested_gitdirs(self, scanner: fs.Scanner, top: str, deep: bool) -> list[str]:
        found: list[str] = []
        pending = [top]
        while pending and len(found) < 256:
            current = pending.pop()
            for name in scanner.children(current):
                path = f"{current}/{name}"
                if scanner.one(f"{path}/HEAD") is not None:
                    found.append(path)
                elif deep and fs.depth(path) - fs.depth(top) < 8:
                    pending.append(path)  # a submodule path with slashes: modules/a/b
        return found

    # --- restoring ----------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Put every watched path back to the baseline; one note per repair."""
        with self._lock:
            notes: list[str] = []
            for home in self._homes:
                notes += self._check_home(home)
            for base in self._bases:
                notes += self._restore_base(base)
            return [_NOTE.format(n) for n in notes]

    def _check_home(self, home: _GitHome) -> list[str]:
        """A workspace `.git` directory that was renamed is moved back; a deleted or replaced
        one is reported (with what to recover), and a replacement removed."""
        git = home.root / ".git"
        home.gone = False
        try:
            fd = beneath.open_root(home.root)
        except OSError:
            home.gone = True
            return [f"{home.root} was moved or replaced; its .git could not be checked"]
        try:
            if fs.identity_of(fd, ".git") == home.identity:
                return self._check_history(home, fd)
            moved = fs.find_identity(fd, home.identity)
            if moved is not None:
                fs.rename_back(fd, moved, ".git")
                note = f"{git} was renamed to {home.root / moved} and has been moved back"
                return [note, *self._check_history(home, fd)]
            home.gone = True
            notes: list[str] = []
            if fs.identity_of(fd, ".git") is not None:
                fs.remove(fd, ".git")
                notes.append(f"{git} was replaced by the command; the replacement was removed")
            return notes + self._lost(home, f"{git} was deleted or moved away by the command")
        except OSError as exc:
            return [f"{git} could not be checked: {exc.strerror}"]
        finally:
            os.close(fd)

    def _check_history(self, home: _GitHome, root_fd: int) -> list[str]:
        """`rm -rf .git/*` keeps the directory, and where the file system keeps no birth
        times `rm -rf .git; git init` may give the new one the old inode: notice the history
        going all the same (HEAD, objects or refs gone, or HEAD unborn after a commit)."""
        missing = [
            name
            for name, kind in (("HEAD", "file"), ("objects", "dir"), ("refs", "dir"))
            if (entry := fs.Scanner(root_fd, 0).one(f".git/{name}")) is None or entry.kind != kind
        ]
        if home.head is not None and not missing and _head_commit_at(root_fd) is None:
            missing.append("the commit HEAD was on")
        if not missing:
            return []
        return self._lost(home, f"{', '.join(missing)} in {home.root / '.git'} were deleted")

    def _lost(self, home: _GitHome, what: str) -> list[str]:
        if home.reported:
            return []
        home.reported = True
        return [
            f"{what} and cannot be recreated: {HISTORY_LIMIT}. Before the run {home.history}. "
            "Recover the history from a remote or a backup"
        ]

    def _restore_base(self, base: _Base) -> list[str]:
        if any(h.gone and base.path.is_relative_to(h.root / ".git") for h in self._homes):
            return []  # reported with the history it held; nothing to restore into
        try:
            fd = beneath.open_root(base.path)
        except OSError:
            return [f"{base.path} is gone or no longer a directory; it was not restored"]
        try:
            return self._repair(base, fd)
        finally:
            os.close(fd)

    def _repair(self, base: _Base, fd: int) -> list[str]:
        scanner = fs.Scanner(fd, self._max, base.baseline, base.equal)
        self._collect(scanner, base, "")
        now = scanner.found
        notes: list[str] = []
        removed: list[str] = []
        for rel in sorted(set(now) - set(base.baseline), key=fs.depth):
            if any(rel.startswith(f"{r}/") for r in removed):
                continue
            path = base.path / rel
            try:
                fs.remove(fd, rel)
                notes.append(f"{path} was created by the command and has been removed")
            except OSError as exc:
                notes.append(f"{path} was created by the command and could not be removed: {exc}")
            removed.append(rel)
        for rel in sorted(base.baseline, key=fs.depth):
            entry, current = base.baseline[rel], now.get(rel)
            if entry.same(current):
                if current is not None and current.signature != entry.signature:
                    # Same bytes under a new signature (restored earlier, or rewritten
                    # unchanged): remember it, so the next check need not read the file.
                    base.equal[rel] = current.signature
                continue
            path = base.path / rel
            if entry.kind == "file" and entry.data is None:
                notes.append(f"{path} changed and is too large to restore")
                continue
            try:
                fs.put(fd, rel, entry)
            except OSError as exc:
                notes.append(f"{path} was changed by the command and could not be restored: {exc}")
                continue
            what = "deleted" if current is None else "modified"
            notes.append(f"{path} was {what} by the command and has been restored")
        return notes
