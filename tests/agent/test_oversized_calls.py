"""A tool call the model cannot have meant (10 MB of arguments, arguments that are not JSON)
costs it one error result, not the run: through the real CLI, the next request carries the
error and a short stub instead of the arguments, the rollout stays small, and `resume`
continues the thread. The claude-code read-before-edit state survives a resume."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from oiexec.core.call_screen import MAX_CALL_ARGUMENT_BYTES, STUB_KEY
from tests.conftest import exec_args, git, run_cli
from tests.support.model_server import (
    ModelServer,
    call,
    custom_call,
    reply,
    tool_outputs,
)

_TEN_MB = 10_000_000
#: Far above what the stubs, errors and prompts of these runs come to, far below the calls.
_SMALL = 200_000


def _rollout(home: Path) -> Path:
    [path] = (home / "sessions").rglob("rollout-*.jsonl")
    return path


def _size(body: dict[str, Any]) -> int:
    return len(json.dumps(body))


def _sent_calls(body: dict[str, Any]) -> dict[str, str]:
    """call id -> the arguments (or input) of each call the request replays (Responses)."""
    return {
        item["call_id"]: item.get("arguments", item.get("input", ""))
        for item in body.get("input") or []
        if item.get("type") in ("function_call", "custom_tool_call")
    }


def test_oversized_and_unparsable_calls_get_errors_and_resume_continues(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    big_command = "echo " + "x" * _TEN_MB
    big_patch = "*** Begin Patch\n*** Add File: big.txt\n+" + "y" * 2_000_000 + "\n*** End Patch\n"
    model_server.enqueue(
        reply(
            tool_calls=[
                call("exec_command", {"cmd": big_command}, call_id="big"),
                custom_call("apply_patch", big_patch, call_id="patch"),
                call("exec_command", '{"cmd": "echo hi"', call_id="cut"),
                call("exec_command", {"cmd": "echo still-works"}, call_id="fine"),
            ]
        ),
        reply("done"),
    )
    started = time.monotonic()
    first = run_cli([*exec_args(model_server), "go"], cwd=repo, timeout=120)
    assert time.monotonic() - started < 90
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert "call was not run: its arguments are 10,000," in first.stderr

    body = model_server.bodies[1]
    assert _size(body) < _SMALL
    outputs = tool_outputs(body)
    assert f"over the limit of {MAX_CALL_ARGUMENT_BYTES:,} bytes" in outputs["big"]
    assert "write a large file in parts" in outputs["big"]
    assert "its input is 2,000,0" in outputs["patch"]
    assert (
        "Expecting ',' delimiter (line 1, column 18; character 17 of 17); the text looks cut off"
        in outputs["cut"]
    )
    assert "still-works" in outputs["fine"]
    assert not (repo / "big.txt").exists()
    sent = _sent_calls(body)
    assert json.loads(sent["big"])[STUB_KEY].startswith("the arguments (10,000,")
    assert json.loads(sent["cut"])["received"] == '{"cmd": "echo hi"'
    assert sent["patch"].startswith(f"[{STUB_KEY}: the input (2,000,0")
    assert json.loads(sent["fine"]) == {"cmd": "echo still-works"}

    path = _rollout(oi_home)
    assert path.stat().st_size < _SMALL

    model_server.enqueue(reply("resumed"))
    resumed = run_cli([*exec_args(model_server), "resume", "--last", "again"], cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    assert _size(model_server.bodies[-1]) < _SMALL
    assert path.stat().st_size < _SMALL


def test_a_session_poisoned_by_an_old_run_resumes(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    """A rollout written before calls were screened: a 10 MB call kept whole, also in the
    history a compaction recorded. Every resume failed as too long for the model."""
    thread_id = "01a23cfe-7d6f-71e5-ba9f-8a2e7727d623"
    day = oi_home / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    path = day / f"rollout-2026-01-02T03-04-05-{thread_id}.jsonl"
    poisoned = {
        "kind": "tool_call",
        "call_id": "call_big",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": "echo " + "x" * _TEN_MB}),
    }
    output = {"kind": "tool_output", "call_id": "call_big", "output": "ran"}
    prompt = {"kind": "message", "role": "user", "text": "first"}
    meta = {"id": thread_id, "cwd": str(repo), "model_provider": "scripted"}
    records = [
        ("session_meta", meta),
        ("response_item", prompt),
        ("response_item", poisoned),
        ("response_item", output),
        ("compacted", {"message": "s", "replacement_history": [prompt, poisoned, output]}),
    ]
    path.write_text(
        "".join(
            json.dumps(
                {"timestamp": "2026-01-02T03:04:05.000Z", "ordinal": n, "type": t, "payload": p}
            )
            + "\n"
            for n, (t, p) in enumerate(records)
        )
    )

    model_server.enqueue(reply("picked up"))
    resumed = run_cli(
        [*exec_args(model_server), "resume", thread_id, "second"], cwd=repo, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    body = model_server.bodies[-1]
    assert _size(body) < _SMALL
    assert STUB_KEY in json.loads(_sent_calls(body)["call_big"])
    assert tool_outputs(body)["call_big"] == "ran"


def test_claude_code_read_state_survives_resume_and_bad_calls(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (repo / "notes.txt").write_text("alpha\n")
    (repo / "other.txt").write_text("alpha\n")
    git(repo, "add", "-A")
    args = [*exec_args(model_server, "-c", 'harness="claude-code"', wire="messages")]
    big = {"file_path": str(repo / "huge.txt"), "content": "z" * _TEN_MB}
    model_server.enqueue(
        reply(
            tool_calls=[
                call("Read", {"file_path": str(repo / "notes.txt")}, call_id="read"),
                call("Write", big, call_id="huge"),
                call("Write", '{"file_path": "x", "content": "unterminated', call_id="cut"),
            ]
        ),
        reply("read it"),
    )
    first = run_cli([*args, "look"], cwd=repo, timeout=120)
    assert first.returncode == 0, first.stderr
    outputs = tool_outputs(model_server.bodies[1])
    assert "alpha" in outputs["read"]
    assert "over the limit" in outputs["huge"] and "not a JSON object" in outputs["cut"]
    assert not (repo / "huge.txt").exists()
    assert _size(model_server.bodies[1]) < _SMALL
    assert _rollout(oi_home).stat().st_size < _SMALL

    edit = {"old_string": "alpha", "new_string": "gamma"}
    model_server.enqueue(
        reply(
            tool_calls=[
                call("Edit", {"file_path": str(repo / "notes.txt"), **edit}, call_id="e1"),
                call("Edit", {"file_path": str(repo / "other.txt"), **edit}, call_id="e2"),
            ]
        ),
        reply("edited"),
    )
    resumed = run_cli([*args, "resume", "--last", "edit it"], cwd=repo, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    outputs = tool_outputs(model_server.bodies[-1])
    assert (repo / "notes.txt").read_text() == "gamma\n", outputs["e1"]
    assert "has not been read yet" in outputs["e2"]
    assert (repo / "other.txt").read_text() == "alpha\n"
