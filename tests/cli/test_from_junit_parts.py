"""The parts of `--from-junit` in-process: where a failing test is found again (pytest node
ids, Jest test files), the derived check, the bounded failures section, and reading the
report files (size cap, symlinks out of the workspace)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.core.policy import SandboxPolicy
from oiexec.output.junit_read import FailedTest, JUnitReport
from oiexec.runner.from_junit import (
    DETAILED,
    NAMED,
    REPORT_MAX,
    SECTION_MAX,
    TRACE_CHARS,
    Failures,
    compose_prompt,
    derive_check,
    jest_test_path,
    locate,
    pytest_node_id,
    read_failures,
)
from oiexec.sandbox.reader import ReadScope


def _test(name: str, classname: str = "", **fields: str | None) -> FailedTest:
    values: dict[str, str | None] = {
        "file": None, "suite": "pytest", "message": "", "type": "", "text": "", **fields,
    }  # fmt: skip
    return FailedTest(name=name, classname=classname, kind="failure", **values)  # type: ignore[arg-type]


def _failures(cwd: Path, *reports: tuple[str, JUnitReport]) -> Failures:
    found = Failures(tuple((cwd / name, report) for name, report in reports))
    return Failures(found.reports, located=locate(found, cwd))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("tests/unit/test_a.py", "test_top.py", "web/test/app.test.ts", "a.b/test_c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    return tmp_path


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        (_test("test_x", "tests.unit.test_a"), "tests/unit/test_a.py::test_x"),
        (
            _test("test_p[1-2]", "tests.unit.test_a.TestK"),
            "tests/unit/test_a.py::TestK::test_p[1-2]",
        ),
        (_test("test_n", "test_top.Outer.Inner"), "test_top.py::Outer::Inner::test_n"),
        # A collection error: no class, the module as the name.
        (_test("tests.unit.test_a"), "tests/unit/test_a.py"),
        # xunit1 names the file; the class follows the module in `classname`.
        (_test("t", "a.b.test_c.K", file="a.b/test_c.py"), "a.b/test_c.py::K::t"),
        (_test("t", "tests.unit.test_gone"), None),
        (_test("t", "..etc.passwd"), None),
        (_test("t", "tests/unit.test_a"), None),
        (_test("t", "x", file="/elsewhere/test_a.py"), None),
        (_test("t", "x", file="../test_top.py"), None),
    ],
)
def test_pytest_node_ids_are_found_from_the_report_and_the_workspace(
    project: Path, test: FailedTest, expected: str | None
) -> None:
    assert pytest_node_id(test, project) == expected


def test_jest_test_files_are_found_from_the_file_attribute_or_the_suite_name(
    project: Path,
) -> None:
    def found(**fields: str | None) -> str | None:
        return jest_test_path(_test("adds", "adds", **fields), project)

    assert found(file="web/test/app.test.ts", suite="calc") == "web/test/app.test.ts"
    assert found(file=str(project / "web/test/app.test.ts"), suite="x") == "web/test/app.test.ts"
    assert found(suite="web/test/app.test.ts") == "web/test/app.test.ts"
    assert found(suite="calc") is None
    assert found(file="/ci/other-checkout/web/test/app.test.ts", suite="calc") is None


def test_the_check_reruns_each_reports_failing_tests_once(project: Path) -> None:
    pytest_report = JUnitReport(
        "pytest",
        9,
        (
            _test("test_x", "tests.unit.test_a"),
            _test("test_y [id]", "tests.unit.test_a"),
            _test("test_x", "tests.unit.test_a"),
        ),
    )
    jest = JUnitReport("jest", 3, (_test("a b", "a b", file="web/test/app.test.ts"),) * 2)
    command, why = derive_check(
        _failures(project, ("py.xml", pytest_report), ("js.xml", jest)), project
    )
    assert why == ""
    assert command == (
        "python3 -m pytest tests/unit/test_a.py::test_x 'tests/unit/test_a.py::test_y [id]' "
        "&& npx --no jest --ci --runTestsByPath web/test/app.test.ts"
    )


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (
            JUnitReport("go", 1, (_test("TestAdd", "example.com/calc"),)),
            "r.xml is a Go report, whose tests cannot be rerun by name",
        ),
        (
            JUnitReport("maven", 1, (_test("adds", "com.x.CalcTest"),)),
            "r.xml is a Maven surefire report, whose tests cannot be rerun by name",
        ),
        (
            JUnitReport("pytest", 1, (_test("t", "tests.unit.test_moved"),)),
            "r.xml: cannot find the test file of 'tests.unit.test_moved::t' under",
        ),
    ],
)
def test_no_check_is_derived_where_the_report_does_not_say_how(
    project: Path, report: JUnitReport, expected: str
) -> None:
    command, why = derive_check(_failures(project, ("r.xml", report)), project)
    assert command is None and why.startswith(f"{project / expected}".rsplit("/", 1)[0] + "/")
    assert expected in why


def test_the_failures_section_is_bounded(project: Path) -> None:
    trace = "\n".join(f"line {n} " + "x" * 50 for n in range(500))
    tests = tuple(
        _test(f"test_{n}", "tests.unit.test_a", message=f"boom {n}\nmore", text=trace)
        for n in range(150)
    )
    failures = _failures(project, ("r.xml", JUnitReport("pytest", 200, tests)))
    prompt = compose_prompt("", failures)

    assert prompt.startswith("Fix the failing tests below.")
    assert "150 of 200 tests failed in" in prompt
    headings = [line for line in prompt.splitlines() if line.startswith("### ")]
    assert headings[0] == "### tests/unit/test_a.py::test_0"
    assert len(headings) <= DETAILED
    # Head and tail of each trace, the middle cut and said so.
    assert "line 0 " in prompt and "line 499 " in prompt and "lines cut ..." in prompt
    assert "- failure: boom 0" in prompt and "more" not in prompt.split("### ")[1].split("```")[0]
    named = [line for line in prompt.splitlines() if line.startswith("- tests/unit/")]
    assert 0 < len(named) <= NAMED
    omitted = 150 - len(headings) - len(named)
    assert f"... and {omitted} more failing tests not listed here." in prompt
    assert len(prompt) < SECTION_MAX + 2_000
    for block in prompt.split("Also failing")[0].split("### ")[1:]:
        assert len(block) < TRACE_CHARS + 500


def test_a_trace_with_backticks_stays_inside_its_fence(project: Path) -> None:
    test = _test("t", "tests.unit.test_a", text="expected ```` but got ``")
    prompt = compose_prompt(
        "Do it.", _failures(project, ("r.xml", JUnitReport("pytest", 1, (test,))))
    )
    assert prompt.startswith("Do it.\n\n## Failing tests")
    assert "`````\nexpected ```` but got ``\n`````" in prompt


def _scope(cwd: Path) -> ReadScope:
    """A run's read scope on `cwd` (/tmp, where the test's files are, not a writable root)."""
    policy = SandboxPolicy(
        mode="workspace-write", cwd=cwd, exclude_tmpdir_env_var=True, exclude_slash_tmp=True
    )
    return ReadScope.for_policy(policy, cwd)


def test_a_report_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.xml"
    with big.open("wb") as file:
        file.truncate(REPORT_MAX + 1)
    with pytest.raises(UsageError) as caught:
        read_failures((big,), _scope(tmp_path))
    assert caught.value.message == (
        f"--from-junit {big}: over the 8 MiB limit for a JUnit report; pass the report of the "
        "failing part of the suite"
    )


def test_a_report_linked_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "outside.xml"
    secret.write_text("<testsuites/>")
    (workspace / "report.xml").symlink_to(secret)
    with pytest.raises(UsageError) as caught:
        read_failures((workspace / "report.xml",), _scope(workspace))
    assert caught.value.message.startswith(f"--from-junit {workspace / 'report.xml'}: ")
    # The same file named where it is (outside the workspace) is the user's to pass.
    ((path, report),) = read_failures((secret,), _scope(workspace)).reports
    assert report.cases == 0 and not os.path.islink(path)


def test_a_missing_report_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        read_failures((tmp_path / "nope.xml",), _scope(tmp_path))
    assert caught.value.message.startswith(f"--from-junit {tmp_path / 'nope.xml'}: ")
    assert "not exist" in caught.value.message


def test_shell_quoting_of_node_ids(project: Path) -> None:
    hostile = _test("test_x[$(touch pwned); `id`]", "tests.unit.test_a")
    command, _ = derive_check(
        _failures(project, ("r.xml", JUnitReport("pytest", 1, (hostile,)))), project
    )
    assert command is not None
    assert shlex.split(command)[-1] == "tests/unit/test_a.py::test_x[$(touch pwned); `id`]"
