from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import ExitCode
from oiexec.review.targets import (
    BaseBranchTarget,
    CommitTarget,
    CustomTarget,
    ReviewTargetError,
    UncommittedTarget,
    changed_lines,
    parse_zero_context_diff,
    resolve_target,
)
from tests.review.conftest import git, numbered


def edit_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = text + "\n"
    path.write_text("".join(lines))


def test_uncommitted_covers_staged_unstaged_and_untracked(git_repo: Path) -> None:
    edit_line(git_repo / "a.txt", 3, "staged change")
    git(git_repo, "add", "a.txt")
    edit_line(git_repo / "a.txt", 8, "unstaged change")
    edit_line(git_repo / "b.txt", 2, "unstaged in b")
    (git_repo / "new.py").write_text("one\ntwo\nthree")  # no final newline
    (git_repo / "ignored.log").write_text("x\n")
    (git_repo / ".gitignore").write_text("*.log\n")

    lines = changed_lines(git_repo, UncommittedTarget())

    assert lines == {
        "a.txt": {3, 8},
        "b.txt": {2},
        "new.py": {1, 2, 3},
        ".gitignore": {1},
    }


def test_uncommitted_from_a_subdirectory_uses_root_relative_paths(git_repo: Path) -> None:
    (git_repo / "pkg").mkdir()
    (git_repo / "pkg" / "mod.py").write_text("x = 1\n")
    edit_line(git_repo / "a.txt", 1, "changed")
    lines = changed_lines(git_repo / "pkg", UncommittedTarget())
    assert lines == {"a.txt": {1}, "pkg/mod.py": {1}}


def test_uncommitted_in_a_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "staged.txt").write_text("a\nb\n")
    git(tmp_path, "add", "staged.txt")
    (tmp_path / "loose.txt").write_text("c\n")
    assert changed_lines(tmp_path, UncommittedTarget()) == {
        "staged.txt": {1, 2},
        "loose.txt": {1},
    }


def test_untracked_binary_file_has_no_lines(git_repo: Path) -> None:
    (git_repo / "blob.bin").write_bytes(b"\x00\x01\x02\n\x03")
    assert changed_lines(git_repo, UncommittedTarget()) == {"blob.bin": set()}


def test_deleted_lines_mark_their_neighbours(git_repo: Path) -> None:
    lines = (git_repo / "a.txt").read_text().splitlines(keepends=True)
    del lines[4]  # remove "line 5"
    (git_repo / "a.txt").write_text("".join(lines))
    assert changed_lines(git_repo, UncommittedTarget()) == {"a.txt": {4, 5}}


def test_deleted_file_is_not_listed(git_repo: Path) -> None:
    (git_repo / "b.txt").unlink()
    assert changed_lines(git_repo, UncommittedTarget()) == {}


def test_base_branch_uses_the_merge_base(git_repo: Path) -> None:
    git(git_repo, "checkout", "-q", "-b", "feature")
    edit_line(git_repo / "a.txt", 2, "feature work")
    git(git_repo, "commit", "-qam", "feature")
    fork_point = git(git_repo, "rev-parse", "main").strip()
    # main moves on after the fork: its new lines must not count as this branch's changes.
    git(git_repo, "checkout", "-q", "main")
    edit_line(git_repo / "b.txt", 4, "main moved on")
    git(git_repo, "commit", "-qam", "main work")
    git(git_repo, "checkout", "-q", "feature")
    edit_line(git_repo / "a.txt", 9, "uncommitted on feature")

    resolved = resolve_target(git_repo, BaseBranchTarget("main"))

    assert f"git diff {fork_point}" in resolved.user_message
    assert "'main'" in resolved.user_message
    assert changed_lines(git_repo, BaseBranchTarget("main")) == {"a.txt": {2, 9}}


def test_single_commit_against_its_parent(git_repo: Path) -> None:
    edit_line(git_repo / "a.txt", 6, "in the commit")
    (git_repo / "c.txt").write_text(numbered(3))
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "the commit")
    sha = git(git_repo, "rev-parse", "HEAD").strip()
    edit_line(git_repo / "a.txt", 1, "later, uncommitted")  # must not count

    resolved = resolve_target(git_repo, CommitTarget(sha[:8], title="Tidy things"))

    assert resolved.commit_sha == sha
    assert resolved.revision == sha
    assert sha in resolved.user_message and "Tidy things" in resolved.user_message
    assert resolved.user_facing_hint == f"commit {sha[:7]}: Tidy things"
    assert changed_lines(git_repo, CommitTarget(sha)) == {"a.txt": {6}, "c.txt": {1, 2, 3}}


def test_root_commit_is_all_added(git_repo: Path) -> None:
    root = git(git_repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert changed_lines(git_repo, CommitTarget(root)) == {
        "a.txt": set(range(1, 11)),
        "b.txt": set(range(1, 6)),
    }


def test_uncommitted_message(git_repo: Path) -> None:
    resolved = resolve_target(git_repo, UncommittedTarget())
    assert "untracked" in resolved.user_message and "git diff HEAD" in resolved.user_message
    assert resolved.repo_root == git_repo.resolve()
    assert resolved.revision is None


def test_custom_instructions_are_sent_verbatim_and_have_no_diff(git_repo: Path) -> None:
    text = "Check the error handling in a.txt\nand nothing else."
    resolved = resolve_target(git_repo, CustomTarget(text))
    assert resolved.user_message == text
    assert resolved.user_facing_hint == "Check the error handling in a.txt"
    assert changed_lines(git_repo, CustomTarget(text)) is None


@pytest.mark.parametrize("target", [BaseBranchTarget("no-such-branch"), CommitTarget("deadbeef")])
def test_unknown_refs_are_usage_errors(git_repo: Path, target: object) -> None:
    with pytest.raises(ReviewTargetError) as info:
        resolve_target(git_repo, target)  # type: ignore[arg-type]
    assert info.value.exit_code == ExitCode.USAGE


def test_option_like_ref_is_not_passed_to_git_as_an_option(git_repo: Path) -> None:
    with pytest.raises(ReviewTargetError):
        resolve_target(git_repo, CommitTarget("--output=/tmp/pwned"))
    assert not Path("/tmp/pwned").exists()


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(ReviewTargetError, match="is not inside a git repository") as info:
        changed_lines(tmp_path, UncommittedTarget())
    assert str(tmp_path) in str(info.value)
    assert info.value.exit_code == ExitCode.USAGE


def test_unrelated_histories_have_no_merge_base(git_repo: Path) -> None:
    git(git_repo, "checkout", "-q", "--orphan", "island")
    git(git_repo, "commit", "-qm", "island")
    git(git_repo, "checkout", "-q", "main")
    with pytest.raises(ReviewTargetError, match="no common ancestor"):
        resolve_target(git_repo, BaseBranchTarget("island"))


def test_diff_parser_handles_quoted_paths_and_counts() -> None:
    diff = (
        'diff --git "a/we\\"ird.py" "b/we\\"ird.py"\n'
        '--- "a/we\\"ird.py"\n'
        '+++ "b/we\\"ird.py"\n'
        "@@ -3 +3 @@\n-x\n+y\n"
        "@@ -10,0 +11,3 @@\n+a\n+b\n+c\n"
        "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
    )
    assert parse_zero_context_diff(diff) == {'we"ird.py': {3, 11, 12, 13}}


def test_non_ascii_path(git_repo: Path) -> None:
    (git_repo / "café.txt").write_text("a\n")
    git(git_repo, "add", "café.txt")
    git(git_repo, "commit", "-qm", "café")
    (git_repo / "café.txt").write_text("a\nb\n")
    assert changed_lines(git_repo, UncommittedTarget()) == {"café.txt": {2}}
