"""Every harness fixes the failing test end to end through the real CLI and the scripted model,
on each wire it supports that the scripted server speaks; the requests it sent are compared
with golden fixtures (tool schemas, system prompt, history shape, rendered results)."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from oiexec.harness.data import harness_ids, load_spec
from tests.conftest import FIXED_CALC, exec_args, run_cli
from tests.harness.golden import check_golden, normalise
from tests.harness.scripts import RUN_TESTS, SCRIPTS
from tests.support import model_server as ms
from tests.support.model_server import ModelServer

SERVER_WIRES = set(typing.get_args(ms.Wire))


def _cases() -> list[tuple[str, str]]:
    cases = []
    for harness_id in harness_ids():
        for wire in load_spec(harness_id).wire:
            if wire in SERVER_WIRES:
                cases.append((harness_id, wire))
    return cases


def test_every_harness_has_a_script_and_a_wire_to_test() -> None:
    assert set(SCRIPTS) == set(harness_ids())
    covered = {h for h, _ in _cases()}
    # zcode runs on the Messages wire only; it is covered once the scripted server speaks it.
    assert covered >= set(harness_ids()) - {"zcode"}


@pytest.mark.parametrize(("harness_id", "wire"), _cases())
def test_fixes_the_failing_test(
    model_server: ModelServer, repo: Path, tmp_path: Path, harness_id: str, wire: str
) -> None:
    script = SCRIPTS[harness_id]
    model_server.enqueue(*script.steps(repo))
    out = tmp_path / "out"
    result = run_cli(
        [
            *exec_args(model_server, wire=wire),
            "-c",
            f"harness={harness_id!r}".replace("'", '"'),
            "--junit",
            str(out / "junit.xml"),
            "--diff",
            str(out / "change.patch"),
            "fix the failing test",
        ],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    assert model_server.remaining == 0, "the run ended before the script did"
    assert (repo / "calc.py").read_text() == FIXED_CALC
    subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=repo, check=True, capture_output=True
    )
    assert "+    return a + b" in (out / "change.patch").read_text()
    assert "python -m unittest" in (out / "junit.xml").read_text()

    if script.shell_items:
        commands = [c for c in result.items("command_execution") if RUN_TESTS in c["command"]]
        assert commands[0]["status"] == "failed"
        assert commands[-1]["status"] == "completed"
        assert "FAILED" in commands[0]["aggregated_output"]
    if script.file_tool:
        changes = result.items("file_change")
        assert changes and changes[-1]["status"] == "completed"
        assert changes[-1]["changes"] == [{"path": str(repo / "calc.py"), "kind": "update"}]
    final = result.events[-1]
    assert final["type"] == "turn.completed"
    messages = result.items("agent_message")
    if script.final is not None:
        assert messages[-1]["text"] == script.final
    else:
        assert "+    return a + b" in messages[-1]["text"]

    bodies = [normalise(body, repo) for body in model_server.bodies]
    check_golden(f"requests/{harness_id}.{wire}", bodies)


def test_claude_code_grep_takes_context(model_server: ModelServer, repo: Path) -> None:
    """Claude Code 2.1.197 sends `context` (rg -C) on `Grep`; it reaches the search."""
    args = {"pattern": "return", "path": str(repo), "output_mode": "content", "context": 1}
    model_server.enqueue(
        ms.reply(tool_calls=[ms.call("Grep", args, call_id="grep_1")]), ms.reply("done")
    )
    result = run_cli(
        [*exec_args(model_server, wire="messages"), "-c", 'harness="claude-code"', "look"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    output = ms.tool_outputs(model_server.bodies[-1])["grep_1"]
    calc = repo / "calc.py"
    assert output == f"{calc}-1-def add(a, b):\n{calc}:2:    return a - b"
