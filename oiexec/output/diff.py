"""`--diff`: the patch a run made to the workspace, from a snapshot taken at the start.

A snapshot is a git tree of the worktree (tracked and untracked, ignored files left out),
built in a private index file so the user's index, HEAD and stash are never touched. Blob
and tree objects land in the repository's object store, where unreferenced objects are
harmless and eventually pruned. Outside a repository a throwaway git dir in a temp directory
plays the same role.

The patch comes from `git diff --binary --full-index` between two such trees, so `git apply`
accepts it on a clean copy of the start state, binary files and renames included. Git runs
through `oiexec.git` (hardened, with timeouts); its failures surface as `GitError`.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from oiexec.git import run_git
from oiexec.output.reportfile import write_report

__all__ = ["Baseline"]

# User config that would change what the patch looks like or make it unappliable.
_STABLE_CONFIG = (
    "core.quotepath=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.renames=true",
    "advice.addEmbeddedRepo=false",
    "core.safecrlf=false",
)


def _index_env(index: Path) -> dict[str, str]:
    return {"GIT_INDEX_FILE": str(index)}


def _find_repository(workspace: Path) -> tuple[Path, Path] | None:
    """(work tree root, git dir) of the repository containing `workspace`, if any."""
    done = run_git(["rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=workspace)
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.returncode != 0 or len(lines) != 2 or not lines[0]:
        return None
    return Path(lines[0]), Path(lines[1])


class Baseline:
    """The worktree as it was when the run started. Call `close` (or rely on garbage
    collection) to remove the private index and any throwaway git dir."""

    def __init__(self, work_tree: Path, git_dir: Path, tmp: Path, tree: str) -> None:
        self.work_tree = work_tree
        self.git_dir = git_dir
        self.tree = tree
        self._tmp = tmp
        self._index = tmp / "index"
        self._finalizer = weakref.finalize(self, shutil.rmtree, tmp, ignore_errors=True)

    @classmethod
    def capture(cls, workspace: Path) -> Baseline:
        """Snapshots `workspace` (the whole repository around it, when there is one)."""
        workspace = workspace.resolve()
        tmp = Path(tempfile.mkdtemp(prefix="oiexec-diff-"))
        try:
            found = _find_repository(workspace)
            if found is not None:
                work_tree, git_dir = found
                _seed_index(git_dir, work_tree, tmp / "index")
            else:
                work_tree, git_dir = workspace, tmp / "git"
                run_git(["init", "-q", "--bare", str(git_dir)], cwd=tmp, check=True)
            tree = _snapshot(work_tree, git_dir, tmp / "index")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(work_tree, git_dir, tmp, tree)

    def snapshot(self) -> str:
        """A tree of the worktree as it is now."""
        self._check_open()
        return _snapshot(self.work_tree, self.git_dir, self._index)

    def diff_bytes(self) -> bytes:
        """The patch from the baseline to the current worktree, exactly as git wrote it."""
        now = self.snapshot()
        if now == self.tree:
            return b""
        done = run_git(
            [
                *_git_prefix(self.work_tree, self.git_dir),
                "diff",
                "--binary",
                "--full-index",
                "--find-renames",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                self.tree,
                now,
            ],
            cwd=self.work_tree,
            extra_env=_index_env(self._index),
            check=True,
        )
        return done.stdout

    def diff(self) -> str:
        """The patch as text. Non-UTF-8 file content is replaced; use `diff_bytes` or
        `write` for a byte-exact patch."""
        return self.diff_bytes().decode("utf-8", "replace")

    def write(self, path: Path) -> None:
        write_report(path, self.diff_bytes())

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Baseline:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError("baseline is closed")


def _git_prefix(work_tree: Path, git_dir: Path) -> list[str]:
    config = [part for item in _STABLE_CONFIG for part in ("-c", item)]
    return [f"--git-dir={git_dir}", f"--work-tree={work_tree}", *config]


def _seed_index(git_dir: Path, work_tree: Path, index: Path) -> None:
    """Starts the private index from the user's one: its stat cache lets `git add -A` skip
    rehashing unchanged files, which is what keeps big repositories fast."""
    real = git_dir / "index"
    if real.is_file():
        shutil.copyfile(real, index)
        return
    # No index yet (fresh clone without checkout, or an unborn branch): start from HEAD.
    env = _index_env(index)
    head = run_git(["rev-parse", "--verify", "-q", "HEAD^{tree}"], cwd=work_tree, extra_env=env)
    if head.returncode == 0:
        run_git(
            [*_git_prefix(work_tree, git_dir), "read-tree", head.stdout.decode().strip()],
            cwd=work_tree,
            extra_env=env,
            check=True,
        )


def _snapshot(work_tree: Path, git_dir: Path, index: Path) -> str:
    prefix = _git_prefix(work_tree, git_dir)
    env = _index_env(index)
    # An unreadable file must not cost the whole patch: git adds everything else and exits
    # non-zero, and the tree is still written.
    run_git([*prefix, "add", "--all", "--ignore-errors", "--", "."], cwd=work_tree, extra_env=env)
    done = run_git([*prefix, "write-tree"], cwd=work_tree, extra_env=env, check=True)
    return done.stdout.decode().strip()
