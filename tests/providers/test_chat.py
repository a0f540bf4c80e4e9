"""The Chat Completions wire against the scripted server over loopback."""

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
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.chat import ChatClient
from oiexec.providers.http import RetryTiming
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
    parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
)
PATCH = ToolSpec(
    name="apply_patch",
    description="Edits files.",
    type="custom",
    format={"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+"},
)


def _request(**fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "deepseek-chat",
        "instructions": "You are a careful engineer.",
        "history": (Message(role="user", text="fix it"),),
        "tools": (EXEC, PATCH),
    }
    values.update(fields)
    return ModelRequest(**values)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


def _respond(server: ModelServer, request: ModelRequest | None = None) -> ModelResponse:
    client = ChatClient(
        server.provider_config("chat"),
        "sk-chat-key-123456",
        provider_id="scripted",
        timing=RetryTiming(base_delay=0.001),
    )
    try:
        return client.respond(request or _request(), lambda *a: None)
    finally:
        client.close()


def test_streamed_text_reasoning_tool_calls_and_usage(server: ModelServer) -> None:
    patch = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\n"
    server.enqueue(
        reply(
            "I'll run the tests.",
            reasoning="The user wants the test fixed.",
            tool_calls=[
                call("exec_command", {"cmd": "python -m unittest"}, call_id="call_1"),
                apply_patch_call(patch, call_id="call_2"),
            ],
            usage=usage(900, 60, cached_input_tokens=512, reasoning_output_tokens=25),
        )
    )

    response = _respond(server)

    assert response.items == (
        Reasoning(content="The user wants the test fixed."),
        Message(role="assistant", text="I'll run the tests."),
        ToolCall(call_id="call_1", name="exec_command", arguments='{"cmd": "python -m unittest"}'),
        ToolCall(call_id="call_2", name="apply_patch", arguments=patch, call_type="custom"),
    )
    assert response.usage == Usage(
        input_tokens=900, cached_input_tokens=512, output_tokens=60, reasoning_output_tokens=25
    )
    assert response.finish_reason == "tool_calls"


def test_request_body_maps_history_to_chat_messages(server: ModelServer) -> None:
    server.enqueue(reply("done"))
    history = (
        Message(
            role="user",
            text="see screenshot",
            images=(ImageInput(path="s.png", data_url="data:image/png;base64,BBBB"),),
        ),
        Reasoning(content="Need to list files first."),
        Message(role="assistant", text="Listing."),
        ToolCall(call_id="c1", name="exec_command", arguments='{"cmd":"ls"}'),
        ToolCall(
            call_id="c2", name="apply_patch", arguments="*** Begin Patch\n", call_type="custom"
        ),
        ToolOutput(call_id="c1", output="a.py\n"),
        ToolOutput(call_id="c2", output="Invalid patch", call_type="custom"),
        Message(role="assistant", text="Could not patch."),
        Message(role="user", text="try again"),
    )
    schema = {"type": "object", "properties": {}}

    _respond(server, _request(history=history, reasoning_effort="low", output_schema=schema))

    (recorded,) = server.model_requests
    assert recorded.path == "/v1/chat/completions"
    body = recorded.body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["reasoning_effort"] == "low"
    assert body["tool_choice"] == "auto"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "codex_output_schema", "strict": True, "schema": schema},
    }
    assert body["messages"] == [
        {"role": "system", "content": "You are a careful engineer."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}},
                {"type": "text", "text": "see screenshot"},
            ],
        },
        {
            "role": "assistant",
            "content": "Listing.",
            "reasoning_content": "Need to list files first.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {
                        "name": "apply_patch",
                        "arguments": json.dumps({"input": "*** Begin Patch\n"}),
                    },
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\n"},
        {"role": "tool", "tool_call_id": "c2", "content": "Invalid patch"},
        {"role": "assistant", "content": "Could not patch."},
        {"role": "user", "content": "try again"},
    ]


def test_tools_offer_custom_tools_as_a_single_input_string(server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    _respond(server)

    exec_tool, patch_tool = server.bodies[0]["tools"]
    assert exec_tool == {
        "type": "function",
        "function": {
            "name": "exec_command",
            "description": "Runs a command.",
            "parameters": EXEC.parameters,
        },
    }
    assert patch_tool["type"] == "function"
    function = patch_tool["function"]
    assert function["name"] == "apply_patch"
    assert function["parameters"]["properties"] == {
        "input": {"type": "string", "description": "The raw tool input."}
    }
    assert function["parameters"]["required"] == ["input"]
    # The grammar is the only way a chat model learns the patch format.
    assert "start: begin_patch hunk+" in function["description"]


def test_no_tools_means_no_tool_fields(server: ModelServer) -> None:
    server.enqueue(reply("plain"))

    response = _respond(server, _request(tools=()))

    body = server.bodies[0]
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    assert "reasoning_effort" not in body
    assert response.final_text == "plain"
    assert response.finish_reason == "stop"


def test_reasoning_without_content_is_not_echoed(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(role="user", text="hi"),
        Reasoning(summary=("from a responses model",), encrypted_content="ENC"),
        Message(role="assistant", text="hello"),
        Message(role="user", text="again"),
    )

    _respond(server, _request(history=history))

    assistant = server.bodies[0]["messages"][2]
    assert assistant == {"role": "assistant", "content": "hello"}


def test_interleaved_tool_call_fragments_are_accumulated_by_index(server: ModelServer) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    server.enqueue(
        raw_events(
            chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "exec_command"}}]}),
            chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "exec_command"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"cmd":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"cmd":"ls"}'}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"pwd"}'}}]}),
            chunk({}, "tool_calls"),
            "[DONE]",
        )
    )

    response = _respond(server)

    assert response.tool_calls == [
        ToolCall(call_id="a", name="exec_command", arguments='{"cmd":"ls"}'),
        ToolCall(call_id="b", name="exec_command", arguments='{"cmd":"pwd"}'),
    ]


def test_stream_without_done_but_with_finish_reason_is_complete(server: ModelServer) -> None:
    server.enqueue(
        raw_events({"id": "x", "choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]})
    )

    assert _respond(server).final_text == "hi"


def test_error_chunk_raises_with_the_server_message(server: ModelServer) -> None:
    server.enqueue(failed("Upstream provider returned 502", code="upstream_error"))

    with pytest.raises(ProviderError) as caught:
        _respond(server)

    assert caught.value.message == (
        "stream disconnected before completion: Upstream provider returned 502"
    )
