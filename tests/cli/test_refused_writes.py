"""A read-only run that was asked to change code says so: the writes the sandbox refused are
counted and reported at the end (stderr, run log, JUnit), and `--require-change` fails a
run whose diff is empty with exit 11 (a read-only one before the model is called)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import BUGGY_CALC, FIX_PATCH, FIXED_CALC, exec_args, run_cli
from tests.support.model_server import ModelServer, apply_patch_call, call, reply

WRITABLE_HINT = "Pass -s workspace-write to let the agent edit files."


def _properties(junit: Path) -> dict[str | None, str | None]:
    return {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}


def test_read_only_refusals_are_counted_and_reported(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    server = model_server
    server.enqueue(
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply(tool_calls=[call("exec_command", {"cmd": "echo fixed > calc.py"})]),
        reply("Fixed calc.py."),
    )
    junit = tmp_path / "junit.xml"
    result = run_cli(
        [*exec_args(server), "-s", "read-only", "--junit", str(junit), "fix the test"],
        cwd=repo,
    )
    # Still exit 0 (the model finished), but nobody can miss that nothing was written.
    assert result.returncode == 0, result.stderr
    assert (repo / "calc.py").read_text() == BUGGY_CALC
    expected = (
        "warning: the sandbox (read-only) refused 2 write(s); the workspace was not changed. "
        + WRITABLE_HINT
    )
    assert expected in result.stderr.splitlines()
    assert all(json.loads(line) for line in result.stdout.splitlines())  # stdout: JSONL only
    assert result.events[-1]["type"] == "turn.completed"
    props = _properties(junit)
    assert props["sandbox_refused_writes"] == "2" and props["status"] == "success"
    case = ET.parse(junit).getroot().find(".//testcase")
    assert case is not None and case.find("failure") is None
    err = case.find("system-err")
    assert err is not None and err.text is not None and "refused 2 write(s)" in err.text
    [log] = list((oi_home / "logs").glob("oiexec-*.log"))
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    assert [n["count"] for n in notes if n["event"] == "sandbox.refused_writes"] == [2]

    # Human mode, resumed (the session's read-only sandbox comes back): said on stderr too,
    # stdout holds the final message alone.
    server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch new.txt"})]),
        reply("Tried again."),
    )
    human = ["exec", *server.config_args(), "resume", "--last", "try again"]
    again = run_cli(human, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Tried again.\n"
    assert "the sandbox (read-only) refused 1 write(s)" in again.stderr
    assert not (repo / "new.txt").exists()

    # --require-change cannot be met there: a usage error before any model request.
    requests = len(server.model_requests)
    refused = run_cli([*human[:-1], "--require-change", "once more"], cwd=repo)
    assert refused.returncode == 2, refused.stderr
    assert "--require-change cannot be met in the read-only sandbox" in refused.stderr
    assert "-s workspace-write" in refused.stderr
    assert len(server.model_requests) == requests
    assert "Traceback" not in refused.stderr + again.stderr + result.stderr


def test_require_change_fails_an_empty_diff_with_exit_11(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    server = model_server
    server.enqueue(reply("Nothing needed changing."))
    junit = tmp_path / "junit.xml"
    args = [*exec_args(server), "-s", "workspace-write", "--require-change", "--junit", str(junit)]
    result = run_cli([*args, "fix the test"], cwd=repo)
    assert result.returncode == 11, result.stderr
    last = result.events[-1]
    assert last["type"] == "turn.failed"
    assert "--require-change: the run ended without changing any file" in last["error"]["message"]
    assert "Traceback" not in result.stderr
    root = ET.parse(junit).getroot()
    failure = root.find(".//testcase/failure")
    assert failure is not None and failure.get("type") == "task"
    assert _properties(junit)["exit_code"] == "11"

    # The same flags with a change: a success.
    server.enqueue(reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("Fixed."))
    fixed = run_cli([*args, "fix the test"], cwd=repo)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.events[-1]["type"] == "turn.completed"
    assert (repo / "calc.py").read_text() == FIXED_CALC
    assert "refused" not in fixed.stderr
