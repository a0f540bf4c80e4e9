"""An error the provider sends in the middle of its answer, and an answer of the wrong shape,
through the real CLI on each wire: a transient one is retried within `stream_max_retries`
after the wait the server asked for, with the partial answer discarded (nothing of it in the
JSONL, no command run from it); a final one fails at once with the provider's exit code; a
wrong shape is retried, then fails naming the field, with the raw event in the run log."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.types import Message, ModelRequest
from oiexec.providers.http import RetryTiming
from oiexec.providers.responses import ResponsesClient
from tests.conftest import CliResult, exec_args, run_cli
from tests.providers.test_faults import failure, notices
from tests.support.model_server import ModelServer, Step, raw_events, reply, running_model_server

PARTIAL = "a partial answer"
#: The server's wait, long next to the 1 ms back-off the tests run with (conftest), so the
#: gap between the two requests shows it was honoured.
HINT = 0.8
RATE_LIMITED = f"Rate limit reached for requests. Please try again in {HINT}s."


def _partial_then_error(wire: str, code: str, message: str) -> Step:
    """Some text and a whole tool call, then the error: what a server failing mid-answer sends."""
    command = json.dumps({"cmd": "touch partial.txt"})
    if wire == "responses":
        return raw_events(
            {"type": "response.created", "response": {"id": "resp_1"}},
            {
                "type": "response.output_item.done",
                "item": {"type": "message", "content": [{"type": "output_text", "text": PARTIAL}]},
            },
            {
                "type": "response.output_item.done",
                "item": {
                    "type": "function_call",
                    "call_id": "call_p",
                    "name": "exec_command",
                    "arguments": command,
                },
            },
            {"type": "response.failed", "response": {"error": {"code": code, "message": message}}},
        )
    if wire == "chat":
        call = {
            "index": 0,
            "id": "call_p",
            "function": {"name": "exec_command", "arguments": command},
        }
        return raw_events(
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": PARTIAL}}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
            {"error": {"code": code, "message": message}},
        )
    return raw_events(
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": PARTIAL},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "tool_use",
                "id": "call_p",
                "name": "exec_command",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": command},
        },
        {"type": "error", "error": {"type": code, "message": message}},
    )


def run(server: ModelServer, repo: Path, wire: str, **provider: Any) -> tuple[CliResult, float]:
    settings: dict[str, Any] = {"stream_max_retries": 2, "request_max_retries": 0, **provider}
    started = time.monotonic()
    result = run_cli([*exec_args(server, wire=wire, **settings), "fix it"], cwd=repo, timeout=60)
    elapsed = time.monotonic() - started
    assert "Traceback" not in result.stderr
    return result, elapsed


@pytest.mark.parametrize("wire", ["responses", "chat", "messages"])
def test_a_rate_limit_mid_answer_is_retried_after_the_servers_wait_and_nothing_is_doubled(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    code = "rate_limit_error" if wire == "messages" else "rate_limit_exceeded"
    arrivals: list[float] = []

    def timed(step: Step) -> Step:
        def play(_body: dict[str, Any]) -> Step:
            arrivals.append(time.monotonic())
            return step

        return play

    model_server.enqueue(
        timed(_partial_then_error(wire, code, RATE_LIMITED)), timed(reply("recovered"))
    )
    result, elapsed = run(model_server, repo, wire)

    assert result.returncode == 0, result.stderr
    (notice,) = notices(result)
    assert notice.startswith("Reconnecting... 1/2 (stream disconnected before completion: ")
    assert f"try again in {HINT}s" in notice
    # The partial answer was discarded whole: not shown, not run, not sent back.
    assert [item["text"] for item in result.items("agent_message")] == ["recovered"]
    assert PARTIAL not in result.stdout
    assert result.items("command_execution", event="item.started") == []
    assert not (repo / "partial.txt").exists()
    assert len(model_server.model_requests) == 2
    assert PARTIAL not in json.dumps(model_server.bodies[-1])
    sessions = Path(os.environ["OPENINTERPRETER_HOME"]) / "sessions"
    for path in sessions.rglob("*.jsonl"):
        assert PARTIAL not in path.read_text()
    # The server's wait was honoured (the back-off alone is 1 ms here), and no more.
    gap = arrivals[1] - arrivals[0]
    assert HINT <= gap < HINT + 10
    assert elapsed < 60


def test_a_spent_quota_mid_answer_fails_at_once_with_the_servers_message(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        _partial_then_error("chat", "insufficient_quota", "You exceeded your current quota.")
    )
    result, elapsed = run(model_server, repo, "chat")

    assert result.returncode == 1
    assert failure(result) == (
        "stream disconnected before completion: You exceeded your current quota."
    )
    assert notices(result) == []  # no retry notice
    assert PARTIAL not in result.stdout
    assert len(model_server.model_requests) == 1
    assert elapsed < 30


def test_an_answer_of_the_wrong_shape_is_retried_then_fails_naming_the_field(
    model_server: ModelServer, repo: Path
) -> None:
    wrong = raw_events(
        {"type": "message_start", "message": {"id": "msg_1"}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "input": {"cmd": "ls"}},
        },
        {"type": "message_stop"},
    )
    model_server.enqueue(wrong, wrong)
    result, elapsed = run(model_server, repo, "messages", stream_max_retries=1)

    assert result.returncode == 1
    expected = (
        "stream disconnected before completion: the server sent an event of the wrong shape: "
        "content_block_start: content_block.name: field required"
    )
    assert failure(result) == expected
    assert notices(result)[0] == f"Reconnecting... 1/1 ({expected})"
    assert len(model_server.model_requests) == 2
    assert elapsed < 30
    # The raw event is in the run log, for the operator who wants to see what came.
    logs = Path(os.environ["OPENINTERPRETER_HOME"]) / "logs"
    lines = [json.loads(line) for p in logs.glob("*.log") for line in p.read_text().splitlines()]
    debug = [line for line in lines if line.get("event") == "provider.debug"]
    assert debug and all('"id": "toolu_1"' in line["message"] for line in debug)


def test_the_servers_wait_is_capped_like_a_retry_after_header() -> None:
    with running_model_server() as server:
        step = _partial_then_error("responses", "rate_limit_exceeded", "Try again in 3600s.")
        server.enqueue(step, reply("after a short wait"))
        client = ResponsesClient(
            server.provider_config("responses", stream_max_retries=1),
            None,
            timing=RetryTiming(base_delay=0.001, max_retry_after=0.05),
        )
        request = ModelRequest(
            model="m", instructions="", history=(Message(role="user", text="hi"),)
        )
        started = time.monotonic()
        try:
            response = client.respond(request, lambda *a: None)
        finally:
            client.close()
    assert response.final_text == "after a short wait"
    assert time.monotonic() - started < 10
