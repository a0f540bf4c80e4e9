"""`interpreter exec --check CMD`: the verify loop through the real CLI, in real repositories,
against the scripted model."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from oiexec.agent.final import PlainAnswer
from oiexec.config.loader import ConfigInputs
from oiexec.config.settings import Settings
from oiexec.core.context import ItemEmitter
from oiexec.core.errors import ExitCode
from oiexec.runner.check import HEAD_LINES, MAX_CHARS, TAIL_LINES, checked_policy, excerpt
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult
from tests.conftest import FIX_PATCH, FIXED_CALC, CliResult, MakeToolContext, exec_args, run_cli
from tests.support.model_server import ModelServer, apply_patch_call, reply, user_texts

UNITTEST = "python -m unittest"
CHECK_ITEM = f"/bin/bash -c '{UNITTEST}'"


def _check_items(result: CliResult, command: str = CHECK_ITEM) -> list[dict[str, Any]]:
    return [i for i in result.items("command_execution") if i["command"] == command]


def _check_case(junit: Path) -> ET.Element:
    cases = [c for c in ET.parse(junit).getroot().iter("testcase")]
    checks = [c for c in cases if c.attrib["classname"] == "oiexec.check"]
    assert len(checks) == 1, [c.attrib for c in cases]
    return checks[0]


def _run_case(junit: Path) -> ET.Element:
    case = next(c for c in ET.parse(junit).getroot().iter("testcase"))
    assert case.attrib["classname"] == "oiexec.exec"
    return case


def test_failing_check_goes_back_to_the_model_until_it_passes(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply("Done, nothing to change."),
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add() in calc.py."),
    )
    junit = tmp_path / "junit.xml"
    args = [*exec_args(model_server), "--check", UNITTEST, "--junit", str(junit)]
    result = run_cli([*args, "fix the failing test"], cwd=repo)

    assert result.returncode == 0, result.stderr
    assert (repo / "calc.py").read_text() == FIXED_CALC
    assert result.types()[-1] == "turn.completed"
    assert result.items("agent_message")[-1]["text"] == "Fixed add() in calc.py."
    # Each check run is a command item of the stream, started and completed.
    checks = _check_items(result)
    assert [(c["status"], c["exit_code"]) for c in checks] == [("failed", 1), ("completed", 0)]
    assert "FAILED (failures=1)" in checks[0]["aggregated_output"]
    started = [i["command"] for i in result.items("command_execution", "item.started")]
    assert started.count(CHECK_ITEM) == 2
    # The stream says why the answer was not taken, without repeating the output.
    assert [i["message"] for i in result.items("error")] == [
        "final answer rejected, asking for a correction: the check `python -m unittest` "
        "exited 1 (attempt 1 of 3); its output went back to the model"
    ]

    # After the first answer the model was told what failed: the exit code, the head of the
    # output (the first failure) and its tail (the summary line).
    correction = user_texts(model_server.bodies[1])[-1]
    assert f"`{UNITTEST}` exited 1" in correction and "attempt 1 of 3" in correction
    shown = correction.split("--- check output ---\n", 1)[1]
    assert "FAIL: test_add" in shown
    assert shown.endswith("FAILED (failures=1)\n--- end of check output ---")
    assert len(model_server.model_requests) == 3

    # JUnit: the run passes, and the check case lists both attempts without failing.
    assert _run_case(junit).find("failure") is None
    case = _check_case(junit)
    assert case.attrib["name"] == f"check: {UNITTEST}"
    assert case.find("failure") is None
    out = case.findtext("system-out") or ""
    assert "attempt 1: [exit 1]" in out and "attempt 2: [exit 0]" in out
    assert "FAILED (failures=1)" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.attrib["tests"], suite.attrib["failures"]) == ("2", "0")


def test_check_still_failing_is_exit_8_after_exactly_n_runs(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("done"), reply("really done"))
    junit = tmp_path / "junit.xml"
    args = [*exec_args(model_server), "--check", UNITTEST, "--max-attempts", "2"]
    result = run_cli(
        [*args, "--junit", str(junit), "-o", str(tmp_path / "last.txt"), "x"], cwd=repo
    )

    assert result.returncode == ExitCode.CHECK_FAILED == 8, result.stderr
    message = f"check still failing after 2 attempts: `{UNITTEST}` exited 1"
    assert result.events[-1] == {
        "type": "turn.failed",
        "error": {"message": message},
        "failure_class": "task",
    }
    assert len(_check_items(result)) == 2
    assert len(model_server.model_requests) == 2
    # A run that failed leaves no last message to pass for an answer.
    assert not (tmp_path / "last.txt").exists()
    failure = _run_case(junit).find("failure")
    assert failure is not None
    assert (failure.attrib["type"], failure.attrib["message"]) == ("task", message)
    check_failure = _check_case(junit).find("failure")
    assert check_failure is not None and check_failure.attrib["message"] == message
    assert "FAILED (failures=1)" in (check_failure.text or "")


def test_config_check_and_the_flag_that_overrides_it(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text(
        'check = "echo config-check; exit 3"\ncheck_max_attempts = 1\n'
    )
    model_server.enqueue(reply("done"))
    configured = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert configured.returncode == 8, configured.stderr
    assert configured.events[-1]["error"]["message"] == (
        "check still failing after 1 attempt: `echo config-check; exit 3` exited 3"
    )

    model_server.enqueue(reply("done"))
    flagged = run_cli([*exec_args(model_server), "--check", "echo flag-check", "x"], cwd=repo)
    assert flagged.returncode == 0, flagged.stderr
    [item] = flagged.items("command_execution")
    assert item["command"] == "/bin/bash -c 'echo flag-check'"
    assert item["aggregated_output"] == "flag-check\n"


def test_check_runs_inside_the_sandbox(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "-s", "read-only", "--max-attempts", "1"]
    result = run_cli([*args, "--check", "touch made-by-check.txt", "x"], cwd=repo)
    assert result.returncode == 8, result.stderr
    assert not (repo / "made-by-check.txt").exists()
    [item] = result.items("command_execution")
    assert item["status"] == "failed"
    assert "Read-only file system" in item["aggregated_output"]


def test_large_output_reaches_the_model_as_head_and_tail(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("done"), reply("done again"))
    check = "seq 1 500; exit 2"
    result = run_cli(
        [*exec_args(model_server), "--max-attempts", "2", "--check", check, "x"], cwd=repo
    )
    assert result.returncode == 8, result.stderr
    correction = user_texts(model_server.bodies[1])[-1]
    shown = correction.split("--- check output ---\n", 1)[1].split("\n--- end of check output")[0]
    cut = 500 - HEAD_LINES - TAIL_LINES
    expected = [
        *map(str, range(1, HEAD_LINES + 1)),
        f"[... {cut} lines cut ...]",
        *map(str, range(501 - TAIL_LINES, 501)),
    ]
    assert shown.splitlines() == expected
    assert f"first {HEAD_LINES} and last {TAIL_LINES} lines; {cut} cut" in correction
    assert "exited 2" in correction
    # The item itself keeps the whole output.
    assert (
        _check_items(result, f"/bin/bash -c '{check}'")[0]["aggregated_output"].count("\n") == 500
    )


def test_one_huge_line_is_cut_to_the_budget() -> None:
    text, note = excerpt("x" * 100_000 + "\nEND")
    assert len(text) < MAX_CHARS + 200 and text.endswith("END")
    assert note is not None and "characters" in note
    assert excerpt("") == ("(no output)", None)


def test_timeout_during_the_check_is_exit_5(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    started = time.monotonic()
    args = [*exec_args(model_server), "--timeout", "3", "--check", "sleep 30"]
    result = run_cli([*args, "x"], cwd=repo)
    assert result.returncode == 5, result.stderr
    assert time.monotonic() - started < 20
    last = result.events[-1]
    assert last["type"] == "turn.failed"
    assert last["error"]["message"].startswith("time limit reached")
    # The check's item completes before the turn ends.
    [item] = _check_items(result, "/bin/bash -c 'sleep 30'")
    assert item["status"] == "failed"
    assert result.types().index("turn.failed") == len(result.events) - 1


def test_check_timeout_kills_a_hanging_check(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "-c", "check_timeout=0.5", "--max-attempts", "1"]
    result = run_cli([*args, "--check", "sleep 30", "x"], cwd=repo)
    assert result.returncode == 8, result.stderr
    assert result.events[-1]["error"]["message"] == (
        "check still failing after 1 attempt: `sleep 30` did not finish within 0.5 seconds"
    )


def test_turn_limit_while_fixing_is_exit_4(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "--max-turns", "1", "--check", "false", "x"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 4, result.stderr
    assert "--max-turns 1" in result.events[-1]["error"]["message"]
    assert len(_check_items(result, "/bin/bash -c false")) == 1


def test_refused_check_is_exit_6_not_a_pass(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "-s", "workspace-write", "--check", "true", "x"]
    env = {"OIEXEC_SANDBOX_TEST_HOOKS": "1", "OI_SANDBOX_FAULTS": "no-userns,no-landlock"}
    result = run_cli(args, cwd=repo, env=env)
    assert result.returncode == 6, result.stderr
    message = result.events[-1]["error"]["message"]
    assert message.startswith("sandbox unavailable") and "the check `true` could not run" in message
    [item] = result.items("command_execution")
    assert item["status"] == "declined"


def test_schema_correction_is_granted_again_after_a_failed_check(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "required": ["ok"]}')
    (repo / "flag").write_text("")
    check = "test ! -e flag"
    model_server.enqueue(
        reply("not json"),
        reply('{"ok": 1}'),
        reply("still not json"),
        reply(
            tool_calls=[apply_patch_call("*** Begin Patch\n*** Delete File: flag\n*** End Patch\n")]
        ),
        reply('{"ok": 2}'),
    )
    args = [*exec_args(model_server), "--output-schema", str(schema), "--check", check, "x"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.items("agent_message")[-1]["text"] == '{"ok": 2}'
    assert [c["exit_code"] for c in _check_items(result, f"/bin/bash -c '{check}'")] == [1, 0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--check", "  "], "not blank"), (["--check", "true", "--max-attempts", "0"], "0")],
)
def test_bad_check_flags_are_usage_errors(repo: Path, extra: list[str], message: str) -> None:
    result = run_cli(["exec", *extra, "x"], cwd=repo)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_policy_of_its_own_is_never_checked(tool_context: MakeToolContext, repo: Path) -> None:
    """The review decides alone when it is done: its policy is not wrapped, and a --check
    given to it is reported as ignored."""

    class ReviewLike:
        def accept(self, text: str, attempt: int) -> str:
            return text

        def present(self, text: str, items: ItemEmitter) -> None:
            pass

    warnings: list[str] = []
    ctx = tool_context(repo, warn=warnings.append)
    request = ExecRequest(prompt="x", cwd=repo, config=ConfigInputs(cwd=repo), check="false")
    inner = ReviewLike()
    result = RunResult(exit_code=ExitCode.SUCCESS)
    assert checked_policy(inner, request, Settings(check="false"), ctx, result) is inner
    assert warnings == ["--check and --max-attempts apply to `exec` runs only; ignoring them here"]
    plain = PlainAnswer()
    assert checked_policy(plain, request, Settings(), ctx, result) is not plain
    # --max-attempts alone checks nothing, and says so.
    warnings.clear()
    alone = ExecRequest(prompt="x", cwd=repo, config=ConfigInputs(cwd=repo), max_attempts=2)
    assert checked_policy(plain, alone, Settings(), ctx, result) is plain
    assert warnings == ["--max-attempts has no effect without --check (or `check` in config)"]


def test_resume_takes_the_check_too(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("first"), reply("second"))
    assert run_cli([*exec_args(model_server), "x"], cwd=repo).returncode == 0
    args = [*exec_args(model_server), "resume", "--last", "--check", "exit 4"]
    resumed = run_cli([*args, "--max-attempts", "1", "again"], cwd=repo)
    assert resumed.returncode == 8, resumed.stderr
    assert resumed.events[-1]["error"]["message"].endswith("`exit 4` exited 4")
