"""Once the flags have parsed, every exit leaves the reports they name, so a CI step that
publishes JUnit or uploads SARIF always finds a file saying what happened."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.review.test_reports import validate_sarif
from tests.support.model_server import ModelServer, fault


def _failure(junit: Path) -> tuple[ET.Element, dict[str, str]]:
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    properties = {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}
    failure = suite.find("testcase/failure")
    assert failure is not None
    return failure, properties


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["-c", "model=123"], 3, "`model` in -c override"),
        (["--output-schema", "missing.json"], 2, "Failed to read output schema file"),
        (["--timeout", "5", "-C", "no-such-dir"], 2, "no such directory"),
    ],
)
def test_a_startup_error_still_writes_junit_and_an_empty_diff(
    model_server: ModelServer,
    repo: Path,
    tmp_path: Path,
    extra: list[str],
    code: int,
    message: str,
) -> None:
    junit, diff, last = tmp_path / "out" / "report.xml", tmp_path / "change.patch", tmp_path / "o"
    diff.write_text("stale patch from an earlier run\n")
    reports = ["--junit", str(junit), "--diff", str(diff), "-o", str(last)]
    result = run_cli([*exec_args(model_server), *reports, *extra, "fix it"], cwd=repo)
    assert result.returncode == code, result.stderr
    failure, properties = _failure(junit)
    assert message in failure.get("message", "")
    assert f"(exit code {code})" in failure.get("message", "")
    assert properties["exit_code"] == str(code) and properties["status"] == "failed"
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == "fix it"
    # The run changed nothing: the stale patch is replaced by an empty one.
    assert diff.read_bytes() == b""
    # Codex's rule: the last message only after a completed turn.
    assert not last.exists()


def test_not_in_a_git_repository_writes_the_report(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    workdir = tmp_path / "plain"
    workdir.mkdir()
    result = run_cli(["exec", "--junit", str(junit), "task"], cwd=workdir)
    assert result.returncode == 2, result.stderr
    failure, _ = _failure(junit)
    assert "Not inside a trusted directory" in failure.get("message", "")
    assert "pass --skip-git-repo-check" in failure.get("message", "")  # the hint too


def test_a_provider_failure_writes_junit_but_no_last_message(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(fault(status=401))
    junit, last = tmp_path / "report.xml", tmp_path / "last.txt"
    args = [*exec_args(model_server), "--junit", str(junit), "-o", str(last), "task"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 1, result.stderr
    assert result.types()[-1] == "turn.failed"
    failure, properties = _failure(junit)
    assert "401" in failure.get("message", "")
    assert properties["exit_code"] == "1"
    assert not last.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "no-such-branch"], "'no-such-branch' is not a commit or branch"),
        (["--uncommitted", "--commit", "HEAD"], "cannot be used together"),
        (["--uncommitted", "-c", "model=123"], "`model` in -c override"),
    ],
)
def test_a_review_that_cannot_start_still_writes_its_reports(
    model_server: ModelServer, repo: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    (repo / "calc.py").write_text("changed = True\n")  # something to review
    junit, sarif, md = tmp_path / "r.xml", tmp_path / "r.sarif", tmp_path / "r.md"
    reports = ["--junit", str(junit), "--sarif", str(sarif), "--markdown", str(md)]
    result = run_cli(["review", *exec_args(model_server)[1:], *reports, *args], cwd=repo)
    assert result.returncode in (2, 3), result.stderr
    failure, properties = _failure(junit)
    assert message in failure.get("message", "")
    assert properties["exit_code"] == str(result.returncode)
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    run = log["runs"][0]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is False
    assert message in run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    text = md.read_text()
    assert "the review did not complete" in text and message in text
    assert model_server.requests == []
