from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from oiexec.core.events import Usage
from oiexec.core.redact import clear_secrets, register_secret
from oiexec.output.junit import CheckRun, RunReport, write_junit


def _report(**changes: object) -> RunReport:
    values: dict[str, object] = {
        "prompt": "fix the failing test\nthen run the suite",
        "thread_id": "0190a0b1-0000-7000-8000-000000000001",
        "model": "gpt-5.5",
        "status": "success",
        "failure_message": None,
        "limit_name": None,
        "exit_code": 0,
        "duration_s": 12.3456,
        "commands": [
            ("pytest -q", 1, "".join(f"line {i}\n" for i in range(100)) + "1 failed\n"),
            ("sed -i s/a/b/ x.py", 0, ""),
            ("sleep 100", None, "partial"),
        ],
        "final_message": "Fixed it.",
        "usage": Usage(input_tokens=1200, output_tokens=300),
    }
    values.update(changes)
    return RunReport(**values)  # type: ignore[arg-type]


def _read(path: Path) -> tuple[ET.Element, ET.Element, ET.Element]:
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    case = suite.find("testcase")
    assert case is not None
    return root, suite, case


def _props(suite: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}


def test_successful_run(tmp_path: Path) -> None:
    path = tmp_path / "reports" / "junit.xml"
    write_junit(path, _report())
    root, suite, case = _read(path)
    assert root.tag == "testsuites"
    assert suite.attrib["name"] == "oiexec"
    assert (suite.attrib["tests"], suite.attrib["failures"], suite.attrib["errors"]) == (
        "1",
        "0",
        "0",
    )
    assert case.attrib["name"] == "fix the failing test"
    assert case.attrib["classname"] == "oiexec.exec"
    assert float(case.attrib["time"]) == pytest.approx(12.346)
    assert case.find("failure") is None
    props = _props(suite)
    assert props["thread_id"] == "0190a0b1-0000-7000-8000-000000000001"
    assert props["model"] == "gpt-5.5"
    assert props["exit_code"] == "0"
    assert props["input_tokens"] == "1200"
    out = case.findtext("system-out") or ""
    assert "$ pytest -q\n[exit 1]" in out
    assert "1 failed" in out and "line 99" in out
    assert "line 5\n" not in out  # only the tail of long output
    assert "$ sleep 100\n[still running]\npartial" in out
    assert "$ sed -i s/a/b/ x.py\n[exit 0]" in out
    assert out.endswith("Fixed it.")


@pytest.mark.parametrize(
    ("status", "limit", "exit_code", "expected_type"),
    [("limit", "max_turns", 4, "budget"), ("limit", "timeout", 5, "budget"),
     ("failed", None, 1, "internal")],
)  # fmt: skip
def test_failed_or_limited_run_is_a_failure(
    tmp_path: Path, status: str, limit: str | None, exit_code: int, expected_type: str
) -> None:
    path = tmp_path / "junit.xml"
    write_junit(
        path,
        _report(
            status=status,
            limit_name=limit,
            exit_code=exit_code,
            failure_message="turn limit reached after 3 turns",
            final_message=None,
        ),
    )
    _, suite, case = _read(path)
    assert suite.attrib["failures"] == "1"
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib["type"] == expected_type
    # The finer reason stays a property: which limit, or a plain failure.
    props = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
    assert props["failure_reason"] == (limit or "failed")
    assert props["failure_class"] == expected_type
    assert failure.attrib["message"] == "turn limit reached after 3 turns"
    assert _props(suite)["exit_code"] == str(exit_code)


def test_secrets_and_control_characters(tmp_path: Path) -> None:
    register_secret("ghp_supersecret_token")
    try:
        path = tmp_path / "junit.xml"
        write_junit(
            path,
            _report(
                prompt="use ghp_supersecret_token <please> & thanks " + "x" * 300,
                status="failed",
                exit_code=1,
                failure_message="401 for ghp_supersecret_token",
                commands=[("echo $TOKEN", 0, "ghp_supersecret_token\x1b[31m\x00red & <b>\n")],
            ),
        )
    finally:
        clear_secrets()
    raw = path.read_text(encoding="utf-8")
    assert "ghp_supersecret" not in raw
    _, _, case = _read(path)  # parses despite ESC/NUL in the output
    assert case.attrib["name"].startswith("use [REDACTED] <please> & thanks")
    assert len(case.attrib["name"]) <= 100
    assert "red & <b>" in (case.findtext("system-out") or "")


def test_empty_prompt_and_bad_status() -> None:
    with pytest.raises(ValueError, match="status"):
        _report(status="ok")
    from oiexec.output.junit import case_name

    assert case_name("\n  \n") == "exec"
    assert case_name("\n  second line first\nthird") == "second line first"


def _cases(path: Path) -> dict[str, ET.Element]:
    return {c.attrib["classname"]: c for c in ET.parse(path).getroot().iter("testcase")}


def test_check_fixed_on_a_later_attempt_passes_and_lists_every_attempt(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    runs = [
        CheckRun(1, 1, "".join(f"noise {i}\n" for i in range(50)) + "1 failed\n", 1.25),
        CheckRun(2, 0, "5 passed\n", 0.5),
    ]
    write_junit(path, _report(check_command="pytest -q", checks=runs))
    _, suite, _ = _read(path)
    # The run succeeded: nothing in the report may turn the CI's test view red.
    assert (suite.attrib["tests"], suite.attrib["failures"]) == ("2", "0")
    check = _cases(path)["oiexec.check"]
    assert check.attrib["name"] == "check: pytest -q"
    assert float(check.attrib["time"]) == pytest.approx(1.75)
    assert check.find("failure") is None and check.find("skipped") is None
    out = check.findtext("system-out") or ""
    assert "attempt 1: [exit 1] 1.25s\n" in out and "1 failed" in out
    assert "noise 5\n" not in out  # only the tail of a long output
    assert out.endswith("attempt 2: [exit 0] 0.50s\n5 passed")


def test_check_still_failing_names_the_check_in_both_cases(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    message = "check still failing after 2 attempts: `pytest -q` exited 1"
    runs = [CheckRun(1, 1, "1 failed\n", 1.0), CheckRun(2, 1, "still 1 failed\n", 1.0)]
    report = _report(
        status="failed",
        exit_code=8,
        failure_message=message,
        final_message=None,
        check_command="pytest -q",
        checks=runs,
    )
    write_junit(path, report)
    cases = _cases(path)
    run_failure = cases["oiexec.exec"].find("failure")
    check_failure = cases["oiexec.check"].find("failure")
    assert run_failure is not None and check_failure is not None
    assert run_failure.attrib == {"type": "task", "message": message}
    assert check_failure.attrib == {"type": "task", "message": message}
    assert check_failure.text == "still 1 failed"


def test_check_cut_short_or_never_run(tmp_path: Path) -> None:
    timed_out = tmp_path / "timeout.xml"
    runs = [CheckRun(1, None, "partial\n", 3.0)]
    write_junit(
        timed_out,
        _report(
            status="limit",
            limit_name="timeout",
            exit_code=5,
            failure_message="time limit reached",
            check_command="sleep 30",
            checks=runs,
        ),
    )
    cases = _cases(timed_out)
    run_failure = cases["oiexec.exec"].find("failure")
    assert run_failure is not None and run_failure.attrib["type"] == "budget"
    failure = cases["oiexec.check"].find("failure")
    assert failure is not None
    assert failure.attrib["message"] == "`sleep 30` did not finish (attempt 1)"
    assert "attempt 1: [did not finish]" in (cases["oiexec.check"].findtext("system-out") or "")

    never = tmp_path / "never.xml"
    write_junit(
        never,
        _report(status="limit", limit_name="max_turns", exit_code=4, check_command="make test"),
    )
    _, suite, _ = _read(never)
    assert (suite.attrib["tests"], suite.attrib["failures"], suite.attrib["skipped"]) == (
        "2",
        "1",
        "1",
    )
    skipped = _cases(never)["oiexec.check"].find("skipped")
    assert skipped is not None and "did not run" in skipped.attrib["message"]


def test_no_check_no_check_case(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(path, _report())
    assert list(_cases(path)) == ["oiexec.exec"]
