from __future__ import annotations

from pathlib import Path

from oiexec.review.locate import locate_findings
from oiexec.review.targets import CommitTarget, UncommittedTarget, changed_lines, resolve_target
from tests.review.conftest import finding, git, review


def statuses(repo: Path, changed: dict[str, set[int]] | None, *findings: object) -> list[str]:
    result = locate_findings(review(*findings), repo, changed)  # type: ignore[arg-type]
    return [f.location_status for f in result.findings]


def test_each_status_against_real_files(git_repo: Path) -> None:
    root = git_repo.resolve()
    changed = {"a.txt": {4, 5}}
    result = locate_findings(
        review(
            finding(f"{root}/a.txt", 5),
            finding(f"{root}/a.txt", 1, 2),
            finding(f"{root}/nope.txt", 1),
            finding(f"{root}/a.txt", 9, 12),
            finding(f"{root}/b.txt", 3),
        ),
        git_repo,
        changed,
    )
    assert [(f.location_status, f.relative_path) for f in result.findings] == [
        ("in_diff", "a.txt"),
        ("outside_diff", "a.txt"),
        ("file_missing", "nope.txt"),  # still named relative to the repo
        ("line_out_of_range", "a.txt"),
        ("outside_diff", "b.txt"),
    ]
    # Kept, not dropped, and otherwise unchanged.
    assert len(result.findings) == 5
    assert result.findings[1].title == "Off-by-one in the loop bound"


def test_range_overlapping_the_change_is_in_diff(git_repo: Path) -> None:
    assert statuses(git_repo, {"a.txt": {7}}, finding("a.txt", 5, 8)) == ["in_diff"]


def test_relative_and_prefixed_paths_resolve(git_repo: Path) -> None:
    (git_repo / "pkg").mkdir()
    (git_repo / "pkg" / "m.py").write_text("x\ny\n")
    changed = {"pkg/m.py": {2}}
    result = locate_findings(
        review(finding("pkg/m.py", 2), finding("./pkg/m.py", 2), finding("b/pkg/m.py", 2)),
        git_repo,
        changed,
    )
    assert {(f.location_status, f.relative_path) for f in result.findings} == {
        ("in_diff", "pkg/m.py")
    }


def test_absolute_path_from_another_checkout_matches_by_tail(git_repo: Path) -> None:
    assert statuses(git_repo, {"a.txt": {1}}, finding("/workspace/project/a.txt", 1)) == ["in_diff"]


def test_paths_leaving_the_repository_are_missing(git_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("s\n")
    result = locate_findings(
        review(finding("../secret.txt", 1), finding(str(outside), 1)), git_repo, {}
    )
    assert [(f.location_status, f.relative_path) for f in result.findings] == [
        ("file_missing", None),
        ("file_missing", None),
    ]


def test_symlinked_repo_root_still_resolves(git_repo: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(git_repo)
    assert statuses(link, {"a.txt": {3}}, finding(f"{link}/a.txt", 3)) == ["in_diff"]


def test_without_a_diff_lines_are_only_checked_against_the_file(git_repo: Path) -> None:
    assert statuses(git_repo, None, finding("a.txt", 10), finding("a.txt", 11)) == [
        "in_file",
        "line_out_of_range",
    ]


def test_end_to_end_with_untracked_file(git_repo: Path) -> None:
    (git_repo / "new.py").write_text("a\nb\nc\n")
    changed = changed_lines(git_repo, UncommittedTarget())
    assert statuses(git_repo, changed, finding(str(git_repo / "new.py"), 2, 3)) == ["in_diff"]


def test_commit_findings_are_checked_against_the_commit_not_the_tree(git_repo: Path) -> None:
    (git_repo / "c.txt").write_text("1\n2\n3\n4\n")
    git(git_repo, "add", "c.txt")
    git(git_repo, "commit", "-qm", "add c")
    sha = git(git_repo, "rev-parse", "HEAD").strip()
    (git_repo / "c.txt").unlink()  # gone from the working tree since
    resolved = resolve_target(git_repo, CommitTarget(sha))
    located = locate_findings(
        review(finding("c.txt", 4), finding("c.txt", 5)),
        resolved.repo_root,
        changed_lines(git_repo, resolved.target),
        revision=resolved.revision,
    )
    assert [f.location_status for f in located.findings] == ["in_diff", "line_out_of_range"]
