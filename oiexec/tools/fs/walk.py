"""Tree walking with ripgrep's default filters, shared by glob, listing and the grep fallback.

Like ripgrep: `.git` is never entered, hidden entries are skipped unless asked for, symlinks
are not followed, and `.gitignore` rules apply only inside a git work tree. Ignore rules are
judged by `git check-ignore --no-index` (so nested `.gitignore`s, negations, `info/exclude`
and the global excludes file behave exactly as git reads them), one call per tree depth.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.errors import ErrorKind, ToolInputError
from oiexec.git import QUICK_TIMEOUT, GitError, run_git, run_git_text
from oiexec.sandbox.reader import ReadRefused, ReadScope, check_directory


@dataclass(frozen=True)
class WalkEntry:
    """A file or directory found under the walk root; `rel` is POSIX-style, `depth` 1-based."""

    path: Path
    rel: str
    is_dir: bool
    depth: int


def git_work_tree(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None outside one (or without git)."""
    start = path if path.is_dir() else path.parent
    try:
        proc = run_git_text(["rev-parse", "--show-toplevel"], cwd=start, timeout=QUICK_TIMEOUT)
    except GitError:
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return Path(proc.stdout.strip())


def ignored_by_git(top: Path, entries: Sequence[WalkEntry]) -> set[Path]:
    """Which `entries` (all inside the work tree `top`) git's ignore rules exclude."""
    if not entries:
        return set()
    names: dict[str, Path] = {}
    for entry in entries:
        rel = os.path.relpath(entry.path, top).replace(os.sep, "/")
        names[rel + ("/" if entry.is_dir else "")] = entry.path
    try:
        proc = run_git(
            ["check-ignore", "--no-index", "-z", "--stdin"],
            cwd=top,
            input="\0".join(names).encode("utf-8") + b"\0",
        )
    except GitError:
        return set()  # as when nothing is ignored: the listing shows more, never less
    out = proc.stdout.decode("utf-8", errors="replace").split("\0")
    return {names[name] for name in out if name in names}


def walk_root(path: Path, scope: ReadScope | None) -> None:
    """Raise a model-actionable error unless the scope lets the tools walk the directory
    `path` (not a link out of the workspace, not /proc or /sys, not denied)."""
    try:
        check_directory(scope or ReadScope(), path)
    except ReadRefused as exc:
        kind: ErrorKind = "denied"
        if exc.kind == "missing" or exc.kind == "not_a_directory":
            kind = exc.kind
        raise ToolInputError(exc.reason, kind=kind, path=path) from None


def walk(
    root: Path,
    *,
    include_hidden: bool = False,
    respect_gitignore: bool = True,
    max_depth: int | None = None,
    scope: ReadScope | None = None,
) -> Iterator[WalkEntry]:
    """Entries under `root`, breadth first, each level sorted by name; what `scope` denies
    is left out."""
    top = git_work_tree(root) if respect_gitignore else None
    level = [root]
    depth = 1
    while level and (max_depth is None or depth <= max_depth):
        found: list[WalkEntry] = []
        for directory in level:
            found.extend(_children(root, directory, depth, include_hidden))
        if scope is not None and scope.deny:
            found = [e for e in found if scope.denial(Path(os.path.realpath(e.path))) is None]
        if top is not None:
            dropped = ignored_by_git(top, found)
            found = [entry for entry in found if entry.path not in dropped]
        yield from found
        level = [entry.path for entry in found if entry.is_dir]
        depth += 1


def _children(root: Path, directory: Path, depth: int, hidden: bool) -> list[WalkEntry]:
    try:
        items = sorted(os.scandir(directory), key=lambda item: item.name)
    except OSError:
        return []  # unreadable directories are skipped, as ripgrep does (with a warning)
    out: list[WalkEntry] = []
    for item in items:
        if item.name == ".git" or (not hidden and item.name.startswith(".")):
            continue
        if item.is_symlink():
            continue
        is_dir = item.is_dir(follow_symlinks=False)
        if not is_dir and not item.is_file(follow_symlinks=False):
            continue
        path = Path(item.path)
        rel = path.relative_to(root).as_posix()
        out.append(WalkEntry(path, rel, is_dir, depth))
    return out
