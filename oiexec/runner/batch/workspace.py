"""Where a task runs: a git worktree of a local repository at the task's `ref`, or a fresh
clone for a URL, inside the task's output directory (`DIR/<id>/worktree`).

The source checkout is never touched: a worktree shares the object store but has its own
HEAD, index and files. A successful task's worktree is removed once its diff is written; a
failed one is kept so `--retry-failed` can resume the session where it stopped.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.redact import redact
from oiexec.git import (
    GitError,
    add_worktree,
    clone_at,
    prune_worktrees,
    remove_worktree,
    repository_root,
    resolve_commit,
    run_git,
)

__all__ = ["WORKTREE_DIR", "Source", "full_diff", "prepare", "release", "resolve_source"]

WORKTREE_DIR = "worktree"

# Worktree bookkeeping of one repository (add, remove, prune) is done one task at a time:
# a prune must not judge a worktree another thread is half-way through adding, and git 2.39's
# own adds are not safe side by side either (tried: one add failed reading the `commondir` of
# the administrative directory another was still making).
_WORKTREE_LOCK = threading.Lock()
#: Repositories whose stale worktree registrations (an output directory deleted by hand)
#: this process has pruned: once per repository, before its first task's worktree, rather
#: than a git process more for every task on the path tasks take one at a time.
_PRUNED: set[str] = set()

# scp-like `user@host:path` or anything with a scheme (https://, ssh://, file://, git://).
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|[\w.-]+@[\w.-]+:)")


@dataclass(frozen=True)
class Source:
    """A task's repository, resolved before anything runs."""

    #: The repository root (local) or the URL (clone).
    location: str
    is_url: bool
    #: Local: the full commit `ref` names. URL: the `ref` as written (resolved by the clone).
    base: str | None
    #: The task's directory inside the repository (a local `repo` may name a subdirectory).
    subdir: str = ""

    def describe(self) -> str:
        return self.location


def resolve_source(repo: str | None, ref: str | None, *, cwd: Path) -> Source:
    """The task's source; `GitError` naming the problem when it is not usable.

    No `repo`: the repository around the current directory. A relative path is taken from
    the current directory, as every other path on the command line is."""
    if repo is not None and _URL_RE.match(repo) and not Path(repo).exists():
        return Source(location=repo, is_url=True, base=ref)
    path = (cwd / (repo or ".")).resolve()
    if not path.is_dir():
        raise GitError(f"repo {repo!r} is not a directory ({path})", cwd=cwd)
    root = repository_root(path)
    subdir = path.relative_to(root.resolve()).as_posix() if path != root.resolve() else ""
    return Source(location=str(root), is_url=False, base=resolve_commit(root, ref), subdir=subdir)


def prepare(source: Source, task_dir: Path) -> tuple[Path, str]:
    """A fresh workspace for the task: (the directory the agent starts in, base commit)."""
    dest = task_dir / WORKTREE_DIR
    if source.is_url:
        commit = clone_at(source.location, dest, source.base)
    else:
        assert source.base is not None  # resolved for every local source
        with _WORKTREE_LOCK:
            if source.location not in _PRUNED:
                prune_worktrees(Path(source.location))
                _PRUNED.add(source.location)
            add_worktree(Path(source.location), dest, source.base)
        commit = source.base
    return dest / source.subdir if source.subdir else dest, commit


def release(source: Source, task_dir: Path) -> None:
    """Removes the task's workspace (worktree registration included)."""
    dest = task_dir / WORKTREE_DIR
    if source.is_url:
        shutil.rmtree(dest, ignore_errors=True)
    else:
        with _WORKTREE_LOCK:
            remove_worktree(Path(source.location), dest)


def full_diff(workspace_root: Path, base_commit: str) -> bytes:
    """The change from `base_commit` to the workspace now (tracked and untracked files,
    binary-safe, secrets masked), as `git apply` takes it on a clean checkout of the base.

    Used after a resumed run, whose own `--diff` only covers what the resumed run changed.
    A private index keeps the workspace's own index as it is."""
    with tempfile.TemporaryDirectory(prefix="oiexec-batch-diff-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(["read-tree", base_commit], cwd=workspace_root, extra_env=env, check=True)
        run_git(["add", "--all", "--ignore-errors", "--", "."], cwd=workspace_root, extra_env=env)
        tree = run_git(["write-tree"], cwd=workspace_root, extra_env=env, check=True)
        # Bounded as `--diff` is: a file too big for the patch is listed, not inlined.
        from oiexec.output.diff import bounded_diff

        config = ("core.quotepath=false", "diff.noprefix=false", "diff.mnemonicPrefix=false")
        prefix = [part for item in (*config, "diff.relative=false") for part in ("-c", item)]
        patch, _omitted = bounded_diff(
            workspace_root,
            prefix,
            base_commit,
            tree.stdout.decode().strip(),
            scratch=Path(tmp),
        )
    return _redact_lines(patch)


def _redact_lines(data: bytes) -> bytes:
    # Line by line, leaving lines that are not UTF-8 (binary hunks) byte-exact.
    lines = []
    for line in data.split(b"\n"):
        try:
            lines.append(redact(line.decode("utf-8")).encode("utf-8"))
        except UnicodeDecodeError:
            lines.append(line)
    return b"\n".join(lines)
