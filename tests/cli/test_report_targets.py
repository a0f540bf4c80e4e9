"""Where reports land, through the real CLI: relative paths are taken from where the command
was started (not `-C`), missing directories are made before the run, and a symlink a change
under review ships on the way to a report is refused before the model is asked."""

from __future__ import annotations

import json
import os
from pathlib import Path

from oiexec.core.errors import ExitCode
from tests.conftest import exec_args, git, run_cli
from tests.review.test_reports import validate_sarif
from tests.review.test_review_cli import answer, review
from tests.support.model_server import ModelServer, reply


def test_relative_reports_with_cd_land_where_the_command_started(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    start = tmp_path / "ci"
    start.mkdir()
    model_server.enqueue(reply("done"))
    reports = ["--junit", "out/a/j.xml", "--diff", "out/b/c.patch", "-o", "out/c/last.txt"]
    result = run_cli([*exec_args(model_server), "-C", str(repo), *reports, "go"], cwd=start)
    assert result.returncode == 0, result.stderr
    assert (start / "out" / "a" / "j.xml").read_text().startswith("<?xml")
    assert (start / "out" / "b" / "c.patch").read_bytes() == b""
    assert (start / "out" / "c" / "last.txt").read_text() == "done"
    assert not (repo / "out").exists()


def test_review_reports_in_new_directories_with_cd(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    model_server.enqueue(reply(answer()))
    start = tmp_path / "ci"
    start.mkdir()
    args = ["-C", str(repo), "--uncommitted", "--sarif", "r/review.sarif", "--markdown", "r/r.md"]
    result = review(model_server, start, *args)
    assert result.returncode == 0, result.stderr
    validate_sarif(json.loads((start / "r" / "review.sarif").read_text()))
    assert (start / "r" / "r.md").read_text().startswith("# Code review")


def test_a_link_the_reviewed_change_ships_is_not_followed(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """An untrusted pull request commits `reports -> <anywhere>`; CI reviews it with
    `--sarif reports/review.sarif`: refused before the model runs, the other reports say so."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, repo / "reports")
    git(repo, "add", "reports")
    model_server.enqueue(reply(answer()))
    result = review(
        model_server,
        repo,
        "--uncommitted",
        "--sarif",
        "reports/review.sarif",
        "--junit",
        "junit.xml",
    )
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert "--sarif reports/review.sarif: a directory on the way is a symbolic link" in (
        result.stderr
    )
    assert model_server.bodies == []
    assert list(elsewhere.iterdir()) == []
    assert "symbolic link" in (repo / "junit.xml").read_text()
