"""End to end: the real CLI fixes a failing test through the scripted model, on both wires."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import FIX_PATCH, FIXED_CALC, exec_args, git, run_cli
from tests.support.model_server import (
    ModelServer,
    apply_patch_call,
    call,
    reply,
    tool_outputs,
    usage,
)


def _fix_script(server: ModelServer) -> None:
    server.enqueue(
        reply(
            tool_calls=[call("exec_command", {"cmd": "python -m unittest -q"})],
            usage=usage(input_tokens=100, output_tokens=10),
        ),
        reply(
            tool_calls=[apply_patch_call(FIX_PATCH)],
            usage=usage(input_tokens=150, output_tokens=20),
        ),
        reply(
            tool_calls=[call("exec_command", {"cmd": "python -m unittest -q"})],
            usage=usage(input_tokens=200, output_tokens=5),
        ),
        reply(
            "Fixed add() in calc.py; the tests pass.",
            usage=usage(input_tokens=250, output_tokens=8),
        ),
    )


@pytest.mark.parametrize("wire", ["responses", "chat"])
def test_fixes_the_failing_test(
    model_server: ModelServer, repo: Path, tmp_path: Path, wire: str
) -> None:
    _fix_script(model_server)
    junit = tmp_path / "out" / "junit.xml"
    diff = tmp_path / "out" / "change.patch"
    last = tmp_path / "out" / "last.txt"
    result = run_cli(
        [
            *exec_args(model_server, wire=wire),
            "--junit",
            str(junit),
            "--diff",
            str(diff),
            "-o",
            str(last),
            "fix the failing test",
        ],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    # The fix is on disk and the tests pass afterwards.
    assert (repo / "calc.py").read_text() == FIXED_CALC
    subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=repo, check=True, capture_output=True
    )

    types = result.types()
    assert types[0] == "thread.started" and types[1] == "turn.started"
    assert types[-1] == "turn.completed"
    commands = result.items("command_execution")
    assert [c["status"] for c in commands] == ["failed", "completed"], commands
    assert commands[0]["exit_code"] == 1 and "FAILED" in commands[0]["aggregated_output"]
    assert commands[0]["command"] == "/bin/bash -c 'python -m unittest -q'"
    changes = result.items("file_change")
    assert changes == [
        {
            "id": changes[0]["id"],
            "type": "file_change",
            "changes": [{"path": str(repo / "calc.py"), "kind": "update"}],
            "status": "completed",
        }
    ]
    messages = result.items("agent_message")
    assert messages[-1]["text"] == "Fixed add() in calc.py; the tests pass."
    final_usage = result.events[-1]["usage"]
    assert final_usage["input_tokens"] == 700 and final_usage["output_tokens"] == 43
    # Item ids are item_0, item_1, ... in order of first appearance.
    seen: list[str] = []
    for event in result.events:
        if event["type"].startswith("item.") and event["item"]["id"] not in seen:
            seen.append(event["item"]["id"])
    assert seen == [f"item_{n}" for n in range(len(seen))]

    # The model saw the failing output of its first command.
    outputs = tool_outputs(model_server.bodies[1])
    assert any(
        "FAILED" in text and "Process exited with code 1" in text for text in outputs.values()
    )

    # Reports.
    assert last.read_text() == "Fixed add() in calc.py; the tests pass."
    clean = tmp_path / "clean"
    git(tmp_path, "clone", "-q", str(repo), str(clean))
    git(clean, "apply", "--check", str(diff))
    git(clean, "apply", str(diff))
    assert (clean / "calc.py").read_text() == FIXED_CALC
    suite = ET.parse(junit).getroot()
    case = suite.find(".//testcase")
    assert case is not None and case.find("failure") is None
    assert "python -m unittest -q" in ET.tostring(suite, encoding="unicode")


def test_human_mode_prints_only_the_final_message_on_stdout(
    model_server: ModelServer, repo: Path
) -> None:
    _fix_script(model_server)
    args = [a for a in exec_args(model_server) if a != "--json"]
    result = run_cli([*args, "fix the failing test"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed add() in calc.py; the tests pass.\n"
    assert "python -m unittest -q" in result.stderr
    assert "tokens used" in result.stderr


def test_github_actions_groups_each_turn(model_server: ModelServer, repo: Path) -> None:
    _fix_script(model_server)
    args = [a for a in exec_args(model_server) if a != "--json"]
    result = run_cli([*args, "fix the failing test"], cwd=repo, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("::group::Turn") == 4
    assert result.stderr.count("::endgroup::") == 4


def test_request_carries_instructions_agents_md_and_tools(
    model_server: ModelServer, repo: Path
) -> None:
    (repo / "AGENTS.md").write_text("Always run the unit tests with python -m unittest.\n")
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "say ok"], cwd=repo)
    assert result.returncode == 0, result.stderr
    body = model_server.bodies[0]
    assert "instructions" not in body
    first = body["input"][0]
    assert first["role"] == "developer"
    texts = json.dumps(body["input"])
    assert "Always run the unit tests with python -m unittest." in texts
    assert "<environment_context>" in texts
    names = [t.get("name") for t in body["tools"]]
    assert names == ["exec_command", "write_stdin", "apply_patch", "update_plan"]
    assert body["store"] is False and body["stream"] is True
