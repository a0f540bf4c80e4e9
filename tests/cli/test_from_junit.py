"""`interpreter exec --from-junit REPORT`: runs seeded from the JUnit reports pytest and Jest
really wrote, through the real CLI against the scripted model: the failing tests reach the
model's first request, and the derived check reruns exactly those tests."""

from __future__ import annotations

import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from oiexec.core.errors import ExitCode
from tests.conftest import BUGGY_CALC, FIX_PATCH, FIXED_CALC, TEST_CALC, exec_args, git, run_cli
from tests.support.junit_reports import (
    FIX_JS,
    JEST_FILE,
    PYTEST_ENV,
    PYTEST_FILE,
    add_pytest_tests,
    jest_installed,
    jest_project,
    jest_report,
    pytest_report,
)
from tests.support.model_server import ModelServer, apply_patch_call, reply, user_texts

#: What pytest's report names, rerun by node id (the unittest file's case included).
PYTEST_CHECK = shlex.join(
    [
        "python3", "-m", "pytest",
        "test_calc.py::AddTest::test_add",
        f"{PYTEST_FILE}::test_add_small_numbers",
        f"{PYTEST_FILE}::TestPairs::test_sum[1-2]",
    ]
)  # fmt: skip


@pytest.fixture(scope="module")
def py_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """The `repo` fixture's files with pytest tests beside them, and the report pytest wrote
    on them: made once, copied by each test (only its location differs)."""
    project = tmp_path_factory.mktemp("pytest-project")
    (project / "calc.py").write_text(BUGGY_CALC)
    (project / "test_calc.py").write_text(TEST_CALC)
    add_pytest_tests(project)
    report = pytest_report(project, project.parent / f"{project.name}.xml")
    return project, report.read_bytes()


@pytest.fixture
def py_repo(py_template: tuple[Path, bytes], tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(py_template[0], repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "calc and its tests")
    return repo


@pytest.fixture
def report(py_template: tuple[Path, bytes], tmp_path: Path) -> Path:
    """pytest's report on `py_repo`: three of its five tests failed."""
    path = tmp_path / "report.xml"
    path.write_bytes(py_template[1])
    return path


def _check_runs(result: object, command: str) -> list[dict[str, object]]:
    items = result.items("command_execution")  # type: ignore[attr-defined]
    return [i for i in items if i["command"] == f"/bin/bash -c {shlex.quote(command)}"]


def test_pytest_failures_reach_the_model_and_the_check_reruns_exactly_them(
    model_server: ModelServer, py_repo: Path, report: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add() in calc.py."),
    )
    result = run_cli(
        [*exec_args(model_server), "--from-junit", str(report)], cwd=py_repo, env=PYTEST_ENV
    )

    assert result.returncode == 0, result.stderr
    assert (py_repo / "calc.py").read_text() == FIXED_CALC
    # No prompt: the default instruction, then every failing test with its message and trace.
    prompt = user_texts(model_server.bodies[0])[-1]
    assert prompt.startswith("Fix the failing tests below.")
    assert "3 of 5 tests failed in " + str(report) in prompt
    for name in ("test_add_small_numbers", "TestPairs::test_sum[1-2]", "AddTest::test_add"):
        assert name in prompt
    assert "assert -1 == 5" in prompt and "assert -1 == (1 + 2)" in prompt
    assert "test_unrelated_passes" not in prompt
    # The derived check ran the three failing tests, and only them, and they passed.
    (check,) = _check_runs(result, PYTEST_CHECK)
    assert check["exit_code"] == 0
    assert "3 passed" in str(check["aggregated_output"])


def test_pytest_failures_not_fixed_end_with_the_check_failed_exit_code(
    model_server: ModelServer, py_repo: Path, report: Path
) -> None:
    model_server.enqueue(reply("Nothing to change."))
    args = [*exec_args(model_server), "--from-junit", str(report), "--max-attempts", "1"]
    task = "Look at the failures; keep the tests as they are."
    result = run_cli([*args, task], cwd=py_repo, env=PYTEST_ENV)

    assert result.returncode == ExitCode.CHECK_FAILED, result.stderr
    prompt = user_texts(model_server.bodies[0])[-1]
    # A prompt given is the instruction; the failures follow it.
    assert prompt.startswith("Look at the failures; keep the tests as they are.\n\n## Failing")
    (check,) = _check_runs(result, PYTEST_CHECK)
    assert check["exit_code"] == 1 and "3 failed" in str(check["aggregated_output"])
    assert f"`{PYTEST_CHECK}` exited 1" in result.events[-1]["error"]["message"]


def test_a_given_check_wins_over_the_derived_one(
    model_server: ModelServer, py_repo: Path, report: Path
) -> None:
    model_server.enqueue(reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("Fixed."))
    args = [*exec_args(model_server), "--from-junit", str(report), "--check", "python -m pytest"]
    result = run_cli(args, cwd=py_repo, env=PYTEST_ENV)

    assert result.returncode == 0, result.stderr
    (check,) = _check_runs(result, "python -m pytest")
    assert "5 passed" in str(check["aggregated_output"])
    assert not _check_runs(result, PYTEST_CHECK)


def test_jest_failures_are_fixed_and_rerun_by_test_path(
    model_server: ModelServer, tmp_path: Path
) -> None:
    project = tmp_path / "js"
    project.mkdir()
    jest_project(project, jest_installed())
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "calc")
    report = jest_report(project, tmp_path / "jest.xml")
    model_server.enqueue(reply(tool_calls=[apply_patch_call(FIX_JS)]), reply("Fixed add()."))
    args = [*exec_args(model_server), "--from-junit", str(report)]
    # npx would look for a newer npm on the registry: nothing a test needs.
    quiet = {"NPM_CONFIG_UPDATE_NOTIFIER": "false"}
    result = run_cli([*args, "Fix the JavaScript."], cwd=project, env=quiet, timeout=120)

    assert result.returncode == 0, result.stderr
    prompt = user_texts(model_server.bodies[0])[-1]
    assert prompt.startswith("Fix the JavaScript.\n\n## Failing tests")
    assert "add adds two numbers" in prompt and "Received: -1" in prompt
    assert "adds zero" not in prompt  # it passed
    command = f"npx --no jest --ci --runTestsByPath {JEST_FILE}"
    (check,) = _check_runs(result, command)
    # The test file of the failing test, rerun whole.
    assert (
        check["exit_code"] == 0 and "Tests:       2 passed, 2 total" in check["aggregated_output"]
    )


def test_a_report_with_nothing_failing_exits_0_without_calling_the_model(
    model_server: ModelServer, py_repo: Path, tmp_path: Path
) -> None:
    report = pytest_report(py_repo, tmp_path / "green.xml", f"{PYTEST_FILE}::test_unrelated_passes")
    junit = tmp_path / "run.xml"
    args = [*exec_args(model_server), "--from-junit", str(report), "--junit", str(junit)]
    result = run_cli(args, cwd=py_repo)

    assert result.returncode == 0, result.stderr
    assert f"nothing to fix: no failing test in {report} (1 test case)" in result.stderr
    assert model_server.model_requests == []
    # The run's own report: one passing case.
    (case,) = ET.parse(junit).getroot().iter("testcase")
    assert list(case) == [] and case.attrib["classname"] == "oiexec.exec"


GO_REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="1">
  <testsuite name="example.com/calc" tests="1" failures="1">
    <properties><property name="go.version" value="go1.22.0"></property></properties>
    <testcase name="TestAdd" classname="example.com/calc" time="0.000">
      <failure message="Failed" type="">calc_test.go:8: add(2, 3) = -1, want 5</failure>
    </testcase>
  </testsuite>
</testsuites>
"""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (GO_REPORT, "is a Go report, whose tests cannot be rerun by name"),
        ("<testsuites><testsuite>", "not well-formed XML: no element found at line 1"),
        (
            '<!DOCTYPE l [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>',
            "declares a document type",
        ),
        ("<html><body>502</body></html>", "the root element is <html>"),
    ],
    ids=["go-without-check", "truncated", "doctype", "not-junit"],
)
def test_a_report_that_cannot_be_used_is_a_usage_error_before_the_model_is_called(
    model_server: ModelServer, repo: Path, tmp_path: Path, content: str, expected: str
) -> None:
    report = tmp_path / "report.xml"
    report.write_text(content)
    result = run_cli([*exec_args(model_server), "--from-junit", str(report)], cwd=repo)

    assert result.returncode == ExitCode.USAGE, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert model_server.model_requests == []
