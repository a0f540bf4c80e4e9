"""The three wires (Chat Completions, Anthropic Messages, Responses) against the scripted server
over loopback. What every wire must do is written once and run per wire (`wire`); what only
one wire does follows, one section per wire."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from oiexec.config.providers import BUILTIN_PROVIDERS
from oiexec.core.errors import ProviderError
from oiexec.core.events import Usage
from oiexec.core.protocols import ModelClient, RetryCallback
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
from oiexec.providers.messages import MessagesClient
from oiexec.providers.registry import create_client
from oiexec.providers.responses import ResponsesClient
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
from tests.support.model_server import Wire as WireApi

KEY = "sk-test-abcdef-0123456789"
#: Headers the runner adds per thread; every client is built with them.
THREAD_HEADERS = {"session-id": "thread-1", "thread-id": "thread-1"}
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

#: What a custom (freeform) tool becomes on a wire without them: one string argument.
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The raw tool input."}},
    "required": ["input"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Wire:
    """One wire: its client, where it posts, the model and shell tool its tests use, and the
    few facts about its format that the shared tests compare against."""

    api: WireApi
    client_type: Callable[..., ModelClient]
    path: str
    model: str
    shell: ToolSpec
    #: The shell tool's one argument.
    shell_argument: str
    #: `finish_reason` of a reply that calls tools.
    tool_calls_finish: str
    #: The headers that carry the key, and the credential header it must not send.
    auth: Callable[[str], dict[str, str]]
    not_auth: str

    def request(self, **fields: Any) -> ModelRequest:
        values: dict[str, Any] = {
            "model": self.model,
            "instructions": "You are a careful engineer.",
            "history": (Message(role="user", text="fix it"),),
            "tools": (self.shell, PATCH),
        }
        values.update(fields)
        return ModelRequest(**values)

    def client(self, server: ModelServer, key: str | None = KEY, **provider: Any) -> ModelClient:
        return self.client_type(
            server.provider_config(self.api, **provider),
            key,
            provider_id="scripted",
            extra_headers=THREAD_HEADERS,
            timing=RetryTiming(base_delay=0.001),
        )

    def respond(
        self,
        server: ModelServer,
        request: ModelRequest | None = None,
        *,
        on_retry: RetryCallback | None = None,
        **provider: Any,
    ) -> ModelResponse:
        """One request; unless `on_retry` is given, it must succeed or fail without a retry."""
        client = self.client(server, **provider)
        retries: list[tuple[int, int, str]] = []
        try:
            return client.respond(
                request or self.request(), on_retry or (lambda *a: retries.append(a))
            )
        finally:
            client.close()
            assert retries == []

    def shell_call(self, command: str, call_id: str) -> Any:
        return call(self.shell.name, {self.shell_argument: command}, call_id=call_id)

    def reasoning(self, text: str, signature: str, item_id: str | None) -> Reasoning:
        """A reply's reasoning as this wire returns it: Responses sends a summary with an item
        id and the encrypted content; Messages the thinking and its signature; Chat only the
        text."""
        if self.api == "responses":
            return Reasoning(summary=(text,), encrypted_content=signature, item_id=item_id)
        if self.api == "messages":
            return Reasoning(content=text, encrypted_content=signature)
        return Reasoning(content=text)

    def function_tool(self, spec: ToolSpec) -> dict[str, Any]:
        """A function tool as this wire offers it."""
        if self.api == "chat":
            return {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            }
        if self.api == "messages":
            return {
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.parameters,
            }
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "strict": False,
            "parameters": spec.parameters,
        }

    def stream_error(self, message: str, code: str) -> str:
        """The `ProviderError` an error event in the stream becomes."""
        detail = f"{code}: {message}" if self.api == "messages" else message
        return f"stream disconnected before completion: {detail}"


CHAT = Wire(
    api="chat",
    client_type=ChatClient,
    path="/v1/chat/completions",
    model="deepseek-chat",
    shell_argument="cmd",
    shell=EXEC,
    tool_calls_finish="tool_calls",
    auth=lambda key: {"authorization": f"Bearer {key}"},
    not_auth="x-api-key",
)
MESSAGES = Wire(
    api="messages",
    client_type=MessagesClient,
    path="/v1/messages",
    model="claude-sonnet-4-5",
    shell_argument="command",
    shell=BASH,
    tool_calls_finish="tool_use",
    auth=lambda key: {"x-api-key": key, "anthropic-version": "2023-06-01"},
    not_auth="authorization",
)
RESPONSES = Wire(
    api="responses",
    client_type=ResponsesClient,
    path="/v1/responses",
    model="gpt-5.5",
    shell_argument="cmd",
    shell=EXEC,
    tool_calls_finish="completed",
    auth=lambda key: {"authorization": f"Bearer {key}"},
    not_auth="x-api-key",
)
WIRES = (CHAT, MESSAGES, RESPONSES)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


@pytest.fixture(params=WIRES, ids=lambda wire: wire.api)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


# --- every wire ----------------------------------------------------------------------------


def test_text_reasoning_tool_calls_and_usage_are_parsed(wire: Wire, server: ModelServer) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    server.enqueue(
        reply(
            "Looking at the test first.",
            reasoning="**Plan**\n\nRead the test.",
            encrypted_reasoning="gAAAA-opaque",
            tool_calls=[
                wire.shell_call("pytest -q", call_id="call_a"),
                apply_patch_call(patch, call_id="call_b"),
            ],
            usage=usage(1200, 80, cached_input_tokens=1024, reasoning_output_tokens=40),
            response_id="resp_42",
        )
    )

    response = wire.respond(server)

    reasoning, message, shell_call, patch_call = response.items
    assert reasoning == wire.reasoning(
        "**Plan**\n\nRead the test.", "gAAAA-opaque", item_id=reasoning.item_id
    )
    assert message == Message(role="assistant", text="Looking at the test first.")
    assert shell_call == ToolCall(
        call_id="call_a",
        name=wire.shell.name,
        arguments=json.dumps({wire.shell_argument: "pytest -q"}),
    )
    assert patch_call == ToolCall(
        call_id="call_b", name="apply_patch", arguments=patch, call_type="custom"
    )
    # Anthropic reports no separate count of thinking tokens.
    reasoning_tokens = 0 if wire is MESSAGES else 40
    assert response.usage == Usage(
        input_tokens=1200,
        cached_input_tokens=1024,
        output_tokens=80,
        reasoning_output_tokens=reasoning_tokens,
    )
    assert response.finish_reason == wire.tool_calls_finish
    assert response.response_id == "resp_42"
    assert response.final_text == "Looking at the test first."


def test_requests_stream_to_the_wire_endpoint_with_the_model(
    wire: Wire, server: ModelServer
) -> None:
    server.enqueue(reply("ok"))

    wire.respond(server)

    (recorded,) = server.model_requests
    assert recorded.path == wire.path
    assert recorded.body["stream"] is True
    assert recorded.body["model"] == wire.model


def test_the_key_goes_in_the_wire_auth_header(wire: Wire, server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    wire.respond(server)

    headers = server.model_requests[0].headers
    for name, value in wire.auth(KEY).items():
        assert headers[name] == value
    assert wire.not_auth not in headers


def test_no_api_key_sends_no_credentials(wire: Wire, server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    client = wire.client_type(server.provider_config(wire.api), None)
    try:
        client.respond(wire.request(), lambda *a: None)
    finally:
        client.close()
    headers = server.model_requests[0].headers
    assert "authorization" not in headers
    assert "x-api-key" not in headers


def test_headers_query_params_and_env_headers(
    wire: Wire, server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORG_HEADER_VALUE", "org-7")
    monkeypatch.delenv("UNSET_HEADER_VALUE", raising=False)
    server.enqueue(reply("ok"))

    wire.respond(
        server,
        query_params={"api-version": "2026-01-01"},
        http_headers={"x-team": "ci"},
        env_http_headers={"x-org": "ORG_HEADER_VALUE", "x-missing": "UNSET_HEADER_VALUE"},
    )

    (recorded,) = server.model_requests
    assert recorded.headers["accept"] == "text/event-stream"
    assert recorded.headers["session-id"] == "thread-1"
    assert recorded.headers["thread-id"] == "thread-1"
    assert recorded.headers["x-team"] == "ci"
    assert recorded.headers["x-org"] == "org-7"
    assert "x-missing" not in recorded.headers
    assert recorded.query == {"api-version": "2026-01-01"}


def test_function_tools_are_offered_in_the_wire_shape(wire: Wire, server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    wire.respond(server)

    assert server.bodies[0]["tools"][0] == wire.function_tool(wire.shell)


@pytest.mark.parametrize("wire", [CHAT, MESSAGES], ids=lambda wire: wire.api)
def test_custom_tools_are_offered_as_a_single_input_string(wire: Wire, server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    wire.respond(server)

    # Messages marks the last tool as a cache breakpoint (tested below).
    offered = {k: v for k, v in server.bodies[0]["tools"][1].items() if k != "cache_control"}
    description = offered.get("function", offered)["description"]
    assert offered == wire.function_tool(
        ToolSpec(name="apply_patch", description=description, parameters=INPUT_SCHEMA)
    )
    # The grammar is the only way such a model learns the patch format.
    assert "start: begin_patch hunk+" in description


@pytest.mark.parametrize(
    ("wire", "message", "code"),
    [
        pytest.param(
            CHAT, "Invalid schema for function 'exec'", "invalid_request_error", id="chat"
        ),
        # ("prompt is too long" is a context-window error: tests/providers/test_faults.py)
        pytest.param(
            MESSAGES,
            "tools.0.name: String should match pattern",
            "invalid_request_error",
            id="messages",
        ),
        pytest.param(
            RESPONSES, "You exceeded your current quota", "insufficient_quota", id="responses"
        ),
    ],
)
def test_an_error_event_a_retry_cannot_fix_fails_at_once_with_the_server_message(
    wire: Wire, server: ModelServer, message: str, code: str
) -> None:
    server.enqueue(failed(message, code=code))

    with pytest.raises(ProviderError) as caught:
        wire.respond(server)

    assert caught.value.message == wire.stream_error(message, code)
    assert len(server.model_requests) == 1


@pytest.mark.parametrize(
    ("wire", "code"),
    [
        pytest.param(CHAT, "502", id="chat"),  # a gateway's status as the code
        pytest.param(MESSAGES, "api_error", id="messages"),
        pytest.param(RESPONSES, "server_is_overloaded", id="responses"),
    ],
)
def test_a_transient_error_event_is_retried_then_gives_up_with_the_server_message(
    wire: Wire, server: ModelServer, code: str
) -> None:
    server.enqueue(*[failed("Upstream overloaded", code=code) for _ in range(2)])
    retries: list[tuple[int, int, str]] = []

    with pytest.raises(ProviderError) as caught:
        wire.respond(server, on_retry=lambda *a: retries.append(a), stream_max_retries=1)

    assert caught.value.message == wire.stream_error("Upstream overloaded", code)
    assert retries == [(1, 1, caught.value.message)]
    assert len(server.model_requests) == 2


# --- chat ----------------------------------------------------------------------------------


def test_chat_request_body_maps_history_to_chat_messages(server: ModelServer) -> None:
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

    CHAT.respond(
        server, CHAT.request(history=history, reasoning_effort="low", output_schema=schema)
    )

    (recorded,) = server.model_requests
    body = recorded.body
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


def test_chat_no_tools_means_no_tool_fields(server: ModelServer) -> None:
    server.enqueue(reply("plain"))

    response = CHAT.respond(server, CHAT.request(tools=()))

    body = server.bodies[0]
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    assert "reasoning_effort" not in body
    assert response.final_text == "plain"
    assert response.finish_reason == "stop"


def test_chat_reasoning_without_content_is_not_echoed(server: ModelServer) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(role="user", text="hi"),
        Reasoning(summary=("from a responses model",), encrypted_content="ENC"),
        Message(role="assistant", text="hello"),
        Message(role="user", text="again"),
    )

    CHAT.respond(server, CHAT.request(history=history))

    assistant = server.bodies[0]["messages"][2]
    assert assistant == {"role": "assistant", "content": "hello"}


def test_chat_interleaved_tool_call_fragments_are_accumulated_by_index(
    server: ModelServer,
) -> None:
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

    response = CHAT.respond(server)

    assert response.tool_calls == [
        ToolCall(call_id="a", name="exec_command", arguments='{"cmd":"ls"}'),
        ToolCall(call_id="b", name="exec_command", arguments='{"cmd":"pwd"}'),
    ]


def test_chat_stream_without_done_but_with_finish_reason_is_complete(
    server: ModelServer,
) -> None:
    server.enqueue(
        raw_events({"id": "x", "choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]})
    )

    assert CHAT.respond(server).final_text == "hi"


# --- messages ------------------------------------------------------------------------------


def test_messages_text_reply_usage_and_body_defaults(server: ModelServer) -> None:
    server.enqueue(reply("All tests pass.", usage=usage(900, 60, cached_input_tokens=512)))

    response = MESSAGES.respond(server)

    assert response.items == (Message(role="assistant", text="All tests pass."),)
    assert response.final_text == "All tests pass."
    assert response.finish_reason == "end_turn"
    assert response.usage == Usage(input_tokens=900, cached_input_tokens=512, output_tokens=60)
    (recorded,) = server.model_requests
    body = recorded.body
    assert body["max_tokens"] == 32_000
    assert "thinking" not in body


def test_messages_bearer_token_providers_send_authorization_instead(
    server: ModelServer,
) -> None:
    server.enqueue(reply("ok"))
    provider = server.provider_config("messages", experimental_bearer_token="gateway-token-123")
    client = MessagesClient(provider, "gateway-token-123", timing=RetryTiming(base_delay=0.001))
    try:
        client.respond(MESSAGES.request(), lambda *a: None)
    finally:
        client.close()
    headers = server.model_requests[0].headers
    assert headers["authorization"] == "Bearer gateway-token-123"
    assert "x-api-key" not in headers


def test_messages_cache_write_tokens_are_reported(server: ModelServer) -> None:
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

    response = MESSAGES.respond(server)

    assert response.response_id == "msg_1"
    assert response.usage == Usage(
        input_tokens=3112, cached_input_tokens=100, cache_write_input_tokens=3000, output_tokens=7
    )


def test_messages_tool_use_round_trip(server: ModelServer) -> None:
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
    client = MESSAGES.client(server)
    try:
        first = client.respond(MESSAGES.request(), lambda *a: None)
        assert first.finish_reason == "tool_use"
        assert first.items == (
            Message(role="assistant", text="Running the tests."),
            ToolCall(call_id="toolu_1", name="Bash", arguments='{"command": "pytest -q"}'),
            ToolCall(call_id="toolu_2", name="apply_patch", arguments=patch, call_type="custom"),
        )
        history = (
            *MESSAGES.request().history,
            *first.items,
            ToolOutput(call_id="toolu_1", output="1 failed"),
            ToolOutput(call_id="toolu_2", output="Invalid patch", is_error=True),
        )
        second = client.respond(MESSAGES.request(history=history), lambda *a: None)
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


def test_messages_tool_choice_can_disable_parallel_tool_use(server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    MESSAGES.respond(server, MESSAGES.request(parallel_tool_calls=False))

    body = server.bodies[0]
    assert tool_names(body) == ["Bash", "apply_patch"]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_messages_cache_breakpoints_on_system_last_tool_and_last_user_turn(
    server: ModelServer,
) -> None:
    server.enqueue(reply("ok"))
    history = (
        Message(role="developer", text="<environment_context>cwd</environment_context>"),
        Message(role="user", text="first question"),
        Message(role="assistant", text="first answer"),
        Message(role="user", text="second question"),
    )

    MESSAGES.respond(server, MESSAGES.request(history=history))

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


def test_messages_thinking_with_signature_is_echoed_unchanged(server: ModelServer) -> None:
    server.enqueue(
        reply(
            tool_calls=[call("Bash", {"command": "ls"}, call_id="toolu_9")],
            reasoning="I should look around first.",
            encrypted_reasoning="EqQBCkYIBxgCKkD+signature==",
        ),
        reply("done"),
    )
    client = MESSAGES.client(server)
    try:
        first = client.respond(MESSAGES.request(reasoning_effort="medium"), lambda *a: None)
        history = (
            *MESSAGES.request().history,
            *first.items,
            ToolOutput(call_id="toolu_9", output="a.py"),
        )
        client.respond(
            MESSAGES.request(history=history, reasoning_effort="medium"), lambda *a: None
        )
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


def test_messages_redacted_thinking_round_trips_and_past_cycles_are_dropped(
    server: ModelServer,
) -> None:
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

    MESSAGES.respond(server, MESSAGES.request(history=history))

    messages = server.bodies[0]["messages"]
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "answer one"}]}
    assert messages[3]["content"][0] == {
        "type": "redacted_thinking",
        "data": "opaque-redacted-data",
    }
    assert "unsigned chat reasoning" not in json.dumps(messages)


def test_messages_thinking_is_parsed_from_a_stream_and_images_are_base64_blocks(
    server: ModelServer,
) -> None:
    server.enqueue(reply("seen", reasoning="Looking at the image."))
    image = ImageInput(path="s.png", data_url="data:image/png;base64,QUJD")

    response = MESSAGES.respond(
        server, MESSAGES.request(history=(Message(role="user", text="look", images=(image,)),))
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
def test_messages_transient_http_errors_are_retried(server: ModelServer, first: Any) -> None:
    server.enqueue(first, reply("after retry"))
    retries: list[tuple[int, int, str]] = []
    response = MESSAGES.respond(server, on_retry=lambda *a: retries.append(a))
    assert response.final_text == "after retry"
    assert len(retries) == 1
    assert len(server.model_requests) == 2


def test_messages_dropped_stream_is_resent_once_and_yields_one_response(
    server: ModelServer,
) -> None:
    server.enqueue(drop_after(4, reply("partial text")), reply("complete"))
    response = MESSAGES.respond(server, on_retry=lambda *a: None)
    assert response.items == (Message(role="assistant", text="complete"),)


def test_messages_overloaded_error_event_is_retried(server: ModelServer) -> None:
    server.enqueue(failed("Overloaded", code="overloaded_error"), reply("recovered"))
    assert MESSAGES.respond(server, on_retry=lambda *a: None).final_text == "recovered"


def test_messages_auth_error_names_the_env_var_and_hides_the_key(server: ModelServer) -> None:
    server.enqueue(fault(401, message=f"invalid x-api-key {KEY}"))
    with pytest.raises(ProviderError) as caught:
        MESSAGES.respond(server, env_key="ANTHROPIC_API_KEY")
    text = str(caught.value)
    assert "ANTHROPIC_API_KEY" in text
    assert KEY not in text
    assert "invalid x-api-key" in text


def test_messages_bad_request_is_not_retried(server: ModelServer) -> None:
    server.enqueue(fault(400, message="messages: roles must alternate"))
    with pytest.raises(ProviderError, match="roles must alternate"):
        MESSAGES.respond(server)
    assert len(server.model_requests) == 1


def test_messages_registry_and_builtin_anthropic_provider(server: ModelServer) -> None:
    anthropic = BUILTIN_PROVIDERS["anthropic"]
    assert anthropic.wire_api == "messages"
    assert anthropic.base_url == "https://api.anthropic.com/v1"
    assert anthropic.env_key == "ANTHROPIC_API_KEY"
    server.enqueue(reply("via registry"))
    client = create_client("scripted", server.provider_config("messages"), KEY)
    try:
        assert isinstance(client, MessagesClient)
        assert client.respond(MESSAGES.request(), lambda *a: None).final_text == "via registry"
    finally:
        client.close()


# --- responses -----------------------------------------------------------------------------


def test_responses_request_body_follows_codex(server: ModelServer) -> None:
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
    request = RESPONSES.request(
        history=history,
        reasoning_effort="high",
        reasoning_summary="auto",
        prompt_cache_key="thread-1",
        parallel_tool_calls=False,
    )

    RESPONSES.respond(server, request)

    (recorded,) = server.model_requests
    body = recorded.body
    assert "instructions" not in body
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


def test_responses_custom_tools_are_offered_as_they_are(server: ModelServer) -> None:
    server.enqueue(reply("ok"))

    RESPONSES.respond(server)

    assert server.bodies[0]["tools"][1] == {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edits files.",
        "format": PATCH.format,
    }


def test_responses_output_schema_and_no_reasoning_settings(server: ModelServer) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    server.enqueue(reply('{"ok": true}'))

    response = RESPONSES.respond(server, RESPONSES.request(output_schema=schema, tools=()))

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


def test_responses_incomplete_names_the_reason(server: ModelServer) -> None:
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
        RESPONSES.respond(server)


def test_responses_output_only_in_completed_event_is_used(server: ModelServer) -> None:
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

    response = RESPONSES.respond(server)

    assert response.final_text == "from completed"
    assert response.usage == Usage()
