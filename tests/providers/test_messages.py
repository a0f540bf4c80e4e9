"""The Anthropic Messages wire against the scripted server over loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from oiexec.config.providers import BUILTIN_PROVIDERS
from oiexec.core.errors import ProviderError
from oiexec.core.events import Usage
from oiexec.core.types import (
    ImageInput,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.http import RetryTiming
from oiexec.providers.messages import MessagesClient
from oiexec.providers.registry import create_client
from tests.support.model_server import (
    ModelServer,
    apply_patch_call,
    call,
    drop_after,
    failed,
    fault,
    raw_events,
    reply,
    running_model_server,
    tool_names,
    tool_outputs,
    usage,
    user_texts,
)

KEY = "sk-ant-test-key-123456"
BASH = ToolSpec(
    name="Bash",
    description="Runs a command.",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
)
PATCH = ToolSpec(
    name="apply_patch",
    description="Edits files.",
    type="custom",
    format={"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+"},
)


def _request(**fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "instructions": "You are a careful engineer.",
        "history": (Message(role="user", text="fix it"),),
        "tools": (BASH, PATCH),
    }
    values.update(fields)
    return ModelRequest(**values)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


def _client(server: ModelServer, **overrides: Any) -> MessagesClient:
    return MessagesClient(
        server.provider_config("messages", **overrides),
        KEY,
        provider_id="scripted",
        timing=RetryTiming(base_delay=0.001),
    )


def _respond(
    server: ModelServer, request: ModelRequest | None = None, **overrides: Any
) -> ModelResponse:
    client = _client(server, **overrides)
    try:
        return client.respond(request or _request(), lambda *a: None)
    finally:
        client.close()


def test_streamed_text_usage_and_headers(server: ModelServer) -> None:
    server.enqueue(reply("All tests pass.", usage=usage(900, 60, cached_input_tokens=512)))

    response = _respond(server)

    assert response.items == (Message(role="assistant", text="All tests pass."),)
    assert response.final_text == "All tests pass."
    assert response.finish_reason == "end_turn"
    assert response.usage == Usage(input_tokens=900, cached_input_tokens=512, output_tokens=60)
    (recorded,) = server.model_requests
    assert recorded.path == "/v1/messages"
    assert recorded.headers["x-api-key"] == KEY
    assert recorded.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in recorded.headers
    body = recorded.body
    assert body["stream"] is True
    assert body["max_tokens"] == 32_000
    assert body["model"] == "claude-sonnet-4-5"
    assert "thinking" not in body


def test_bearer_token_providers_send_authorization_instead(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    provider = server.provider_config("messages", experimental_bearer_token="gateway-token-123")
    client = MessagesClient(provider, "gateway-token-123", timing=RetryTiming(base_delay=0.001))
    try:
        client.respond(_request(), lambda *a: None)
    finally:
        client.close()
    headers = server.model_requests[0].headers
    assert headers["authorization"] == "Bearer gateway-token-123"
    assert "x-api-key" not in headers


def test_cache_write_tokens_are_reported(server: ModelServer) -> None:
    server.enqueue(
        raw_events(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "usage": {
                        "input_tokens": 12,
                        "cache_read_input_tokens": 100,
                        "cache_creation_input_tokens": 3000,
                        "output_tokens": 1,
                    },
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 7},
            },
            {"type": "message_stop"},
        )
    )

    response = _respond(server)

    assert response.response_id == "msg_1"
    assert response.usage == Usage(
        input_tokens=3112, cached_input_tokens=100, cache_write_input_tokens=3000, output_tokens=7
    )


def test_tool_use_round_trip(server: ModelServer) -> None:
    patch = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\n"
    server.enqueue(
        reply(
            "Running the tests.",
            tool_calls=[
                call("Bash", {"command": "pytest -q"}, call_id="toolu_1"),
                apply_patch_call(patch, call_id="toolu_2"),
            ],
        ),
        reply("Fixed."),
    )
    client = _client(server)
    try:
        first = client.respond(_request(), lambda *a: None)
        assert first.finish_reason == "tool_use"
        assert first.items == (
            Message(role="assistant", text="Running the tests."),
            ToolCall(call_id="toolu_1", name="Bash", arguments='{"command": "pytest -q"}'),
            ToolCall(call_id="toolu_2", name="apply_patch", arguments=patch, call_type="custom"),
        )
        history = (
            *_request().history,
            *first.items,
            ToolOutput(call_id="toolu_1", output="1 failed"),
            ToolOutput(call_id="toolu_2", output="Invalid patch", is_error=True),
        )
        second = client.respond(_request(history=history), lambda *a: None)
    finally:
        client.close()

    assert second.final_text == "Fixed."
    body = server.bodies[1]
    assert tool_outputs(body) == {"toolu_1": "1 failed", "toolu_2": "Invalid patch"}
    assert user_texts(body) == ["fix it"]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Running the tests."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Bash",
                "input": {"command": "pytest -q"},
            },
            {"type": "tool_use", "id": "toolu_2", "name": "apply_patch", "input": {"input": patch}},
        ],
    }
    # Both results in one user message, in call order; only the error is flagged.
    results = body["messages"][2]
    assert results["role"] == "user"
    assert [b["tool_use_id"] for b in results["content"]] == ["toolu_1", "toolu_2"]
    assert "is_error" not in results["content"][0]
    assert results["content"][1]["is_error"] is True


def test_tools_are_name_description_input_schema(server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    _respond(server, _request(parallel_tool_calls=False))

    body = server.bodies[0]
    assert tool_names(body) == ["Bash", "apply_patch"]
    bash, patch = body["tools"]
    assert bash == {
        "name": "Bash",
        "description": "Runs a command.",
        "input_schema": BASH.parameters,
    }
    assert patch["input_schema"] == {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The raw tool input."}},
        "required": ["input"],
        "additionalProperties": False,
    }
    assert "start: begin_patch hunk+" in patch["description"]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_cache_breakpoints_on_system_last_tool_and_last_user_turn(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(role="developer", text="<environment_context>cwd</environment_context>"),
        Message(role="user", text="first question"),
        Message(role="assistant", text="first answer"),
        Message(role="user", text="second question"),
    )

    _respond(server, _request(history=history))

    body = server.bodies[0]
    ephemeral = {"type": "ephemeral"}
    # Leading developer context joins the system prompt; only the last block is marked.
    assert body["system"] == [
        {"type": "text", "text": "You are a careful engineer."},
        {
            "type": "text",
            "text": "<environment_context>cwd</environment_context>",
            "cache_control": ephemeral,
        },
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == ephemeral
    first_user, answer, last_user = body["messages"]
    assert "cache_control" not in first_user["content"][-1]
    assert answer == {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]}
    assert last_user["content"] == [
        {"type": "text", "text": "second question", "cache_control": ephemeral}
    ]
    marked = json.dumps(body).count('"cache_control"')
    assert marked == 3  # the API allows at most four


def test_thinking_with_signature_is_echoed_unchanged(server: ModelServer) -> None:
    server.enqueue(
        reply(
            tool_calls=[call("Bash", {"command": "ls"}, call_id="toolu_9")],
            reasoning="I should look around first.",
            encrypted_reasoning="EqQBCkYIBxgCKkD+signature==",
        ),
        reply("done"),
    )
    client = _client(server)
    try:
        first = client.respond(_request(reasoning_effort="medium"), lambda *a: None)
        history = (
            *_request().history,
            *first.items,
            ToolOutput(call_id="toolu_9", output="a.py"),
        )
        client.respond(_request(history=history, reasoning_effort="medium"), lambda *a: None)
    finally:
        client.close()

    assert first.items[0] == Reasoning(
        content="I should look around first.", encrypted_content="EqQBCkYIBxgCKkD+signature=="
    )
    assert server.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assistant = server.bodies[1]["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should look around first.",
        "signature": "EqQBCkYIBxgCKkD+signature==",
    }
    assert assistant["content"][1]["type"] == "tool_use"


def test_redacted_thinking_round_trips_and_past_cycles_are_dropped(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(role="user", text="one"),
        Reasoning(content="old thoughts", encrypted_content="old-sig"),
        Message(role="assistant", text="answer one"),
        Message(role="user", text="two"),
        Reasoning(encrypted_content="opaque-redacted-data"),
        ToolCall(call_id="t1", name="Bash", arguments='{"command": "ls"}'),
        ToolOutput(call_id="t1", output="x"),
        Reasoning(content="unsigned chat reasoning"),
    )

    _respond(server, _request(history=history))

    messages = server.bodies[0]["messages"]
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "answer one"}]}
    assert messages[3]["content"][0] == {
        "type": "redacted_thinking",
        "data": "opaque-redacted-data",
    }
    assert "unsigned chat reasoning" not in json.dumps(messages)


def test_thinking_is_parsed_from_a_stream_and_images_are_base64_blocks(
    server: ModelServer,
) -> None:
    server.enqueue(reply("seen", reasoning="Looking at the image."))
    image = ImageInput(path="s.png", data_url="data:image/png;base64,QUJD")

    response = _respond(
        server, _request(history=(Message(role="user", text="look", images=(image,)),))
    )

    (thinking, text) = response.items
    assert isinstance(thinking, Reasoning) and thinking.content == "Looking at the image."
    assert thinking.encrypted_content  # the server's generated signature
    assert text == Message(role="assistant", text="seen")
    content = server.bodies[0]["messages"][0]["content"]
    assert content[0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
    }


@pytest.mark.parametrize("first", [fault(429, retry_after=0), fault(500), fault(529)])
def test_transient_http_errors_are_retried(server: ModelServer, first: Any) -> None:
    server.enqueue(first, reply("after retry"))
    retries: list[tuple[int, int, str]] = []
    client = _client(server)
    try:
        response = client.respond(_request(), lambda *a: retries.append(a))
    finally:
        client.close()
    assert response.final_text == "after retry"
    assert len(retries) == 1
    assert len(server.model_requests) == 2


def test_dropped_stream_is_resent_once_and_yields_one_response(server: ModelServer) -> None:
    server.enqueue(drop_after(4, reply("partial text")), reply("complete"))
    response = _respond(server)
    assert response.items == (Message(role="assistant", text="complete"),)


def test_overloaded_error_event_is_retried(server: ModelServer) -> None:
    server.enqueue(failed("Overloaded", code="overloaded_error"), reply("recovered"))
    assert _respond(server).final_text == "recovered"


def test_other_error_events_fail_with_the_server_message(server: ModelServer) -> None:
    server.enqueue(failed("prompt is too long", code="invalid_request_error"))
    with pytest.raises(ProviderError, match="prompt is too long"):
        _respond(server)
    assert len(server.model_requests) == 1


def test_auth_error_names_the_env_var_and_hides_the_key(server: ModelServer) -> None:
    server.enqueue(fault(401, message=f"invalid x-api-key {KEY}"))
    with pytest.raises(ProviderError) as caught:
        _respond(server, env_key="ANTHROPIC_API_KEY")
    text = str(caught.value)
    assert "ANTHROPIC_API_KEY" in text
    assert KEY not in text
    assert "invalid x-api-key" in text


def test_bad_request_is_not_retried(server: ModelServer) -> None:
    server.enqueue(fault(400, message="messages: roles must alternate"))
    with pytest.raises(ProviderError, match="roles must alternate"):
        _respond(server)
    assert len(server.model_requests) == 1


def test_registry_and_builtin_anthropic_provider(server: ModelServer) -> None:
    anthropic = BUILTIN_PROVIDERS["anthropic"]
    assert anthropic.wire_api == "messages"
    assert anthropic.base_url == "https://api.anthropic.com/v1"
    assert anthropic.env_key == "ANTHROPIC_API_KEY"
    server.enqueue(reply("via registry"))
    client = create_client("scripted", server.provider_config("messages"), KEY)
    try:
        assert isinstance(client, MessagesClient)
        assert client.respond(_request(), lambda *a: None).final_text == "via registry"
    finally:
        client.close()
