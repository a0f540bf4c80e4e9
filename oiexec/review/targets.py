"""What to review: the four targets of `exec review`, their user messages and changed lines.

Line numbers are new-side numbers from `git diff -U0`, compared the same way the model is told
to look: `--uncommitted` is the working tree against HEAD plus untracked files, `--base` the
working tree against the merge base (`git diff <sha>`), `--commit` the commit against its
first parent. Custom instructions have no diff of their own (`changed_lines` gives None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.errors import UsageError
from oiexec.git import GitError, run_git_text

__all__ = [
    "BaseBranchTarget",
    "CommitTarget",
    "CustomTarget",
    "ResolvedTarget",
    "ReviewTarget",
    "ReviewTargetError",
    "UncommittedTarget",
    "changed_lines",
    "has_changes",
    "parse_zero_context_diff",
    "resolve_target",
]

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_DIFF_FLAGS = (
    "diff",
    "-U0",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
#: Enough of a file's head to tell text from binary, as git itself does.
_BINARY_SNIFF = 8000
_MAX_UNTRACKED_BYTES = 16 * 1024 * 1024


class ReviewTargetError(UsageError):
    """The target cannot be reviewed here: not a git repository, unknown branch or commit."""


@dataclass(frozen=True)
class UncommittedTarget:
    """Staged, unstaged and untracked changes."""


@dataclass(frozen=True)
class BaseBranchTarget:
    branch: str


@dataclass(frozen=True)
class CommitTarget:
    sha: str
    title: str | None = None


@dataclass(frozen=True)
class CustomTarget:
    instructions: str


ReviewTarget = UncommittedTarget | BaseBranchTarget | CommitTarget | CustomTarget


@dataclass(frozen=True)
class ResolvedTarget:
    """A target checked against the repository, with what to tell the model."""

    target: ReviewTarget
    repo_root: Path
    #: The user message that starts the review turn.
    user_message: str
    #: A short human label, e.g. for `EnteredReviewMode.user_facing_hint` or report titles.
    user_facing_hint: str
    #: Full SHA of the reviewed commit (`--commit` only).
    commit_sha: str | None = None

    @property
    def revision(self) -> str | None:
        """The git revision whose files the findings point at (None: the working tree)."""
        return self.commit_sha


def resolve_target(repo: Path, target: ReviewTarget) -> ResolvedTarget:
    """Check the target against `repo` and word the request; raise `ReviewTargetError`."""
    root = _repo_root(repo)
    if isinstance(target, UncommittedTarget):
        return ResolvedTarget(target, root, _UNCOMMITTED_MESSAGE, "uncommitted changes")
    if isinstance(target, BaseBranchTarget):
        sha = _merge_base(root, target.branch)
        message = (
            f"Review the changes on the current branch compared with the base branch "
            f"'{target.branch}'. The merge base of HEAD and '{target.branch}' is commit {sha}: "
            f"run `git diff {sha}` to see exactly what this branch changes (including any "
            "uncommitted edits), and review only those changes."
        )
        return ResolvedTarget(target, root, message, f"changes against '{target.branch}'")
    if isinstance(target, CommitTarget):
        sha = _commit_sha(root, target.sha)
        titled = f' ("{target.title}")' if target.title else ""
        message = (
            f"Review the changes introduced by commit {sha}{titled}. Run `git show {sha}` to "
            "see them. Point your findings at lines as they are in that commit."
        )
        hint = f"commit {sha[:7]}" + (f": {target.title}" if target.title else "")
        return ResolvedTarget(target, root, message, hint, commit_sha=sha)
    first_line = target.instructions.strip().splitlines()[0] if target.instructions.strip() else ""
    return ResolvedTarget(target, root, target.instructions, first_line[:80] or "custom review")


_UNCOMMITTED_MESSAGE = (
    "Review the uncommitted changes in this repository: staged, unstaged and untracked files. "
    "Run `git status` to list them and `git diff HEAD` to see changes to tracked files; read "
    "untracked files directly, since they are new in full. Review only these changes."
)


def changed_lines(repo: Path, target: ReviewTarget) -> dict[str, set[int]] | None:
    """New-side line numbers touched by the change, keyed by repo-relative POSIX path.

    Untracked files (for `--uncommitted`) count as added in full. A file present with an
    empty set changed without new-side lines (binary, emptied). None for custom instructions.
    """
    root = _repo_root(repo)
    if isinstance(target, CustomTarget):
        return None
    if isinstance(target, UncommittedTarget):
        base = _git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        lines = parse_zero_context_diff(_git(root, *_DIFF_FLAGS, base or _empty_tree(root)))
        for path in _untracked(root):
            lines[path] = _untracked_lines(root, root / path)
        return lines
    if isinstance(target, BaseBranchTarget):
        return parse_zero_context_diff(_git(root, *_DIFF_FLAGS, _merge_base(root, target.branch)))
    sha = _commit_sha(root, target.sha)
    parents = _git(root, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    before = parents[0] if parents else _empty_tree(root)
    return parse_zero_context_diff(_git(root, *_DIFF_FLAGS, before, sha))


def has_changes(repo: Path, target: ReviewTarget) -> bool:
    """Whether the target changes anything at all: a deleted file, a mode change or a binary
    file counts, though none of them has new-side lines. Custom instructions always have
    something to review."""
    if isinstance(target, CustomTarget):
        return True
    root = _repo_root(repo)
    if isinstance(target, UncommittedTarget):
        status = _git(root, "status", "--porcelain", "-z", "--untracked-files=all")
        return bool(status.strip("\0"))
    if isinstance(target, BaseBranchTarget):
        compared: tuple[str, ...] = (_merge_base(root, target.branch),)
    else:
        sha = _commit_sha(root, target.sha)
        parents = _git(root, "rev-list", "--parents", "-n", "1", sha).split()[1:]
        compared = (parents[0] if parents else _empty_tree(root), sha)
    names = _git(root, "diff", "--name-only", "-z", "--no-ext-diff", *compared)
    return bool(names.strip("\0"))


def parse_zero_context_diff(diff: str) -> dict[str, set[int]]:
    """Map each file of a `git diff -U0` patch to its added or modified new-side lines."""
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            target = _unquote(raw[4:])
            current = None if target == "/dev/null" else lines.setdefault(target[2:], set())
        elif raw.startswith("@@") and current is not None:
            match = _HUNK.match(raw)
            if not match:
                continue
            start, count = int(match.group(1)), int(match.group(2) or "1")
            if count:
                current.update(range(start, start + count))
            else:
                # A pure deletion sits after line `start`; a comment about the removed code
                # lands on one of its neighbours, so both count as touched.
                current.update({max(start, 1), start + 1})
    return lines


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths (`"b/caf\\303\\251.py"`)."""
    path = path.rstrip("\t")
    if not (len(path) >= 2 and path[0] == path[-1] == '"'):
        return path
    raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", "replace")


def _untracked_lines(root: Path, path: Path) -> set[int]:
    from oiexec.sandbox.reader import ReadScope, read_file

    # Through the one reader: the repository is under review and may be hostile (a FIFO, a
    # link to /dev/zero or out of the repository is no file of the change).
    try:
        data = read_file(ReadScope.confined(root), path, max_bytes=_MAX_UNTRACKED_BYTES).data
    except OSError:
        return set()  # missing, not a file, or a data dump nobody comments on line by line
    return _all_lines(data)


def _all_lines(content: bytes) -> set[int]:
    if b"\0" in content[:_BINARY_SNIFF] or not content:
        return set()
    count = content.count(b"\n") + (0 if content.endswith(b"\n") else 1)
    return set(range(1, count + 1))


def _untracked(root: Path) -> list[str]:
    out = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
    return [p for p in out.split("\0") if p and (root / p).is_file()]


def _repo_root(repo: Path) -> Path:
    try:
        done = run_git_text(["rev-parse", "--show-toplevel"], cwd=repo, check=False)
    except GitError as exc:
        raise ReviewTargetError(str(exc)) from exc
    if done.returncode == 0:
        return Path(done.stdout.strip()).resolve()
    # git runs with LC_ALL=C (oiexec.git), so its message can be matched. Outside any
    # repository is a usage mistake with a plain fix; git's own words would not say it.
    if "not a git repository" in done.stderr:
        raise ReviewTargetError(
            f"{repo} is not inside a git repository, so there is no change to review",
            hint="Run the review inside a repository, or point it at one with -C DIR.",
        )
    raise ReviewTargetError(f"git rev-parse failed in {repo}: {done.stderr.strip()}")


def _merge_base(root: Path, branch: str) -> str:
    _commit_sha(root, branch)
    sha = _git(root, "merge-base", "HEAD", branch, check=False).strip()
    if not sha:
        raise ReviewTargetError(f"HEAD and '{branch}' have no common ancestor to compare against")
    return sha


def _commit_sha(root: Path, rev: str) -> str:
    sha = _git(
        root, "rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}", check=False
    ).strip()
    if not sha:
        raise ReviewTargetError(f"'{rev}' is not a commit or branch in {root}")
    return sha


def _empty_tree(root: Path) -> str:
    # Asked of git so it is right for SHA-1 and SHA-256 repositories alike.
    return _git(root, "hash-object", "-t", "tree", "--stdin", stdin="").strip()


def _git(cwd: Path, *args: str, check: bool = True, stdin: str | None = None) -> str:
    try:
        done = run_git_text(
            # Above the threshold git calls a file binary and shows no lines: a 300 MiB file
            # in the change must not become 300 MiB of diff held here.
            [
                "-c",
                "core.quotepath=off",
                "-c",
                f"core.bigFileThreshold={_MAX_UNTRACKED_BYTES}",
                *args,
            ],
            cwd=cwd,
            input=stdin if stdin is not None else "",
            check=check,
            errors="surrogateescape",
        )
    except GitError as exc:
        # Not a repository, an unknown revision, no git at all: the target is unusable here.
        raise ReviewTargetError(str(exc)) from exc
    return done.stdout
