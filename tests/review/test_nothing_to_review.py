"""`review` with nothing to review passes at once without asking the model: a pull request
from a fork (no API key) or an empty range must not fail the gate for nothing."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import exec_args, git, run_cli
from tests.review.test_reports import validate_sarif
from tests.review.test_review_cli import answer
from tests.support.model_server import ModelServer, reply


def _review(server: ModelServer | None, repo: Path, tmp_path: Path, *args: str) -> list[Path]:
    """Runs `interpreter review ARGS` with every report; returns [junit, sarif, md, last]."""
    paths = [tmp_path / name for name in ("r.xml", "r.sarif", "r.md", "last.txt")]
    reports = ["--junit", str(paths[0]), "--sarif", str(paths[1]), "--markdown", str(paths[2])]
    provider = exec_args(server)[4:] if server is not None else []
    result = run_cli(["review", *provider, *reports, "-o", str(paths[3]), *args], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "nothing to review" in result.stderr
    assert result.stdout == ""
    return paths


def _assert_empty_reports(paths: list[Path], reason: str) -> None:
    junit, sarif, md, last = paths
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    assert log["runs"][0]["results"] == []
    text = md.read_text()
    assert "Nothing to review" in text and reason in text and "No findings." in text
    assert last.read_text() == f"Nothing to review: {reason}."


def test_a_clean_tree_passes_without_a_request(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    paths = _review(model_server, repo, tmp_path, "--uncommitted")
    _assert_empty_reports(paths, "there are no uncommitted changes (staged, unstaged or untracked)")
    assert model_server.requests == []


def test_no_api_key_is_needed_for_nothing(repo: Path, tmp_path: Path) -> None:
    """No provider configured and no OPENAI_API_KEY: a fork's pull request has no secrets."""
    paths = _review(None, repo, tmp_path, "--uncommitted")
    _assert_empty_reports(paths, "there are no uncommitted changes (staged, unstaged or untracked)")


def test_an_empty_range_against_the_base_passes(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    paths = _review(model_server, repo, tmp_path, "--base", "main")
    _assert_empty_reports(paths, "the current branch has no changes against 'main'")
    assert model_server.requests == []


def test_an_empty_commit_passes(model_server: ModelServer, repo: Path, tmp_path: Path) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    paths = _review(model_server, repo, tmp_path, "--commit", "HEAD")
    _assert_empty_reports(paths, "commit HEAD changes no file")
    assert model_server.requests == []


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda repo: git(repo, "rm", "-q", "calc.py"), id="a-staged-deletion"),
        pytest.param(lambda repo: (repo / "new.py").write_text("x = 1\n"), id="an-untracked-file"),
        pytest.param(lambda repo: (repo / "calc.py").chmod(0o755), id="a-mode-change"),
    ],
)
def test_a_change_without_added_lines_is_still_reviewed(
    model_server: ModelServer, repo: Path, change: Callable[[Path], object]
) -> None:
    change(repo)
    model_server.enqueue(reply(answer()))
    args = ["review", *exec_args(model_server)[4:], "--uncommitted"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "nothing to review" not in result.stderr
    assert len(model_server.model_requests) == 1


def test_a_commit_that_only_deletes_a_file_is_reviewed(
    model_server: ModelServer, repo: Path
) -> None:
    git(repo, "rm", "-q", "calc.py")
    git(repo, "commit", "-q", "-m", "drop calc")
    model_server.enqueue(reply(answer()))
    result = run_cli(["review", *exec_args(model_server)[4:], "--commit", "HEAD"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert len(model_server.model_requests) == 1
