"""The Responses wire against the scripted server over loopback: bodies, headers, parsing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from oiexec.core.errors import ProviderError
from oiexec.core.events import Usage
from oiexec.core.types import (
    ImageInput,
    Message,
    ModelRequest,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.http import RetryTiming
from oiexec.providers.responses import ResponsesClient
from tests.support.model_server import (
    ModelServer,
    apply_patch_call,
    call,
    failed,
    raw_events,
    reply,
    running_model_server,
    usage,
)

EXEC = ToolSpec(
    name="exec_command",
    description="Runs a command.",
    parameters={
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
)
PATCH = ToolSpec(
    name="apply_patch",
    description="Edits files.",
    type="custom",
    format={"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"},
)
SECRET = "sk-test-abcdef-0123456789"


def _request(**fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "gpt-5.5",
        "instructions": "You are a careful engineer.",
        "history": (Message(role="user", text="fix the failing test"),),
        "tools": (EXEC, PATCH),
    }
    values.update(fields)
    return ModelRequest(**values)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


def _client(server: ModelServer, **provider: Any) -> ResponsesClient:
    return ResponsesClient(
        server.provider_config(**provider),
        SECRET,
        provider_id="scripted",
        extra_headers={"session-id": "thread-1", "thread-id": "thread-1"},
        timing=RetryTiming(base_delay=0.001),
    )


def _respond(server: ModelServer, request: ModelRequest | None = None, **provider: Any) -> Any:
    client = _client(server, **provider)
    retries: list[tuple[int, int, str]] = []
    try:
        return client.respond(request or _request(), lambda *a: retries.append(a))
    finally:
        client.close()
        assert retries == []


def test_text_reasoning_tool_calls_and_usage_are_parsed(server: ModelServer) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    server.enqueue(
        reply(
            "Looking at the test first.",
            reasoning="**Plan**\n\nRead the test.",
            encrypted_reasoning="gAAAA-opaque",
            tool_calls=[
                call("exec_command", {"cmd": "pytest -q"}, call_id="call_a"),
                apply_patch_call(patch, call_id="call_b"),
            ],
            usage=usage(1200, 80, cached_input_tokens=1024, reasoning_output_tokens=40),
            response_id="resp_42",
        )
    )

    response = _respond(server)

    reasoning, message, exec_call, patch_call = response.items
    assert reasoning == Reasoning(
        summary=("**Plan**\n\nRead the test.",),
        encrypted_content="gAAAA-opaque",
        item_id=reasoning.item_id,
    )
    assert message == Message(role="assistant", text="Looking at the test first.")
    assert exec_call == ToolCall(
        call_id="call_a", name="exec_command", arguments='{"cmd": "pytest -q"}'
    )
    assert patch_call == ToolCall(
        call_id="call_b", name="apply_patch", arguments=patch, call_type="custom"
    )
    assert response.usage == Usage(
        input_tokens=1200, cached_input_tokens=1024, output_tokens=80, reasoning_output_tokens=40
    )
    assert response.response_id == "resp_42"
    assert response.final_text == "Looking at the test first."


def test_request_body_follows_codex(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(
            role="user",
            text="what is in this picture?",
            images=(ImageInput(path="/tmp/a.png", data_url="data:image/png;base64,AAAA"),),
        ),
        Reasoning(summary=("thinking",), encrypted_content="ENC", item_id="rs_1"),
        Message(role="assistant", text="Let me look."),
        ToolCall(call_id="c1", name="exec_command", arguments='{"cmd":"ls"}'),
        ToolOutput(call_id="c1", output="a.png\n"),
        ToolCall(call_id="c2", name="apply_patch", arguments="*** Begin Patch", call_type="custom"),
        ToolOutput(call_id="c2", output="Invalid patch", call_type="custom", is_error=True),
    )
    request = _request(
        history=history,
        reasoning_effort="high",
        reasoning_summary="auto",
        prompt_cache_key="thread-1",
        parallel_tool_calls=False,
    )

    _respond(server, request)

    (recorded,) = server.model_requests
    assert recorded.path == "/v1/responses"
    body = recorded.body
    assert "instructions" not in body
    assert body["model"] == "gpt-5.5"
    assert body["stream"] is True
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is False
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "thread-1"
    assert "text" not in body
    assert body["input"] == [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "You are a careful engineer."}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {"type": "input_text", "text": "what is in this picture?"},
            ],
        },
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "thinking"}],
            "encrypted_content": "ENC",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me look."}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "exec_command",
            "arguments": '{"cmd":"ls"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "a.png\n"},
        {
            "type": "custom_tool_call",
            "call_id": "c2",
            "name": "apply_patch",
            "input": "*** Begin Patch",
        },
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "Invalid patch"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "exec_command",
            "description": "Runs a command.",
            "strict": False,
            "parameters": EXEC.parameters,
        },
        {
            "type": "custom",
            "name": "apply_patch",
            "description": "Edits files.",
            "format": PATCH.format,
        },
    ]


def test_output_schema_and_no_reasoning_settings(server: ModelServer) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    server.enqueue(reply('{"ok": true}'))

    response = _respond(server, _request(output_schema=schema, tools=()))

    body = server.bodies[0]
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "strict": True,
            "schema": schema,
            "name": "codex_output_schema",
        }
    }
    assert "reasoning" not in body
    assert "prompt_cache_key" not in body
    assert body["tools"] == []
    assert json.loads(response.final_text) == {"ok": True}


def test_headers_auth_query_params_and_env_headers(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORG_HEADER_VALUE", "org-7")
    monkeypatch.delenv("UNSET_HEADER_VALUE", raising=False)
    server.enqueue(reply("ok"))

    _respond(
        server,
        query_params={"api-version": "2026-01-01"},
        http_headers={"x-team": "ci"},
        env_http_headers={"x-org": "ORG_HEADER_VALUE", "x-missing": "UNSET_HEADER_VALUE"},
    )

    (recorded,) = server.model_requests
    assert recorded.headers["authorization"] == f"Bearer {SECRET}"
    assert recorded.headers["accept"] == "text/event-stream"
    assert recorded.headers["session-id"] == "thread-1"
    assert recorded.headers["thread-id"] == "thread-1"
    assert recorded.headers["x-team"] == "ci"
    assert recorded.headers["x-org"] == "org-7"
    assert "x-missing" not in recorded.headers
    assert recorded.query == {"api-version": "2026-01-01"}


def test_no_api_key_sends_no_authorization(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    client = ResponsesClient(server.provider_config(), None)
    try:
        client.respond(_request(), lambda *a: None)
    finally:
        client.close()
    assert "authorization" not in server.model_requests[0].headers


def test_response_failed_raises_with_the_server_message(server: ModelServer) -> None:
    server.enqueue(failed("Model overloaded, try later", code="server_is_overloaded"))

    with pytest.raises(ProviderError) as caught:
        _respond(server)

    assert caught.value.message == (
        "stream disconnected before completion: Model overloaded, try later"
    )
    assert len(server.model_requests) == 1


def test_response_incomplete_names_the_reason(server: ModelServer) -> None:
    server.enqueue(
        raw_events(
            {"type": "response.created", "response": {"id": "resp_1"}},
            {
                "type": "response.incomplete",
                "response": {"id": "resp_1", "incomplete_details": {"reason": "max_output_tokens"}},
            },
        )
    )

    with pytest.raises(ProviderError, match="reason: max_output_tokens"):
        _respond(server)


def test_output_only_in_completed_event_is_used(server: ModelServer) -> None:
    server.enqueue(
        raw_events(
            {"type": "response.created", "response": {"id": "resp_9"}},
            {
                "type": "response.completed",
                "response": {
                    "id": "resp_9",
                    "status": "completed",
                    "output": [
                        {
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "from completed"}],
                        }
                    ],
                },
            },
        )
    )

    response = _respond(server)

    assert response.final_text == "from completed"
    assert response.usage == Usage()
