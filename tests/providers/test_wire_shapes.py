"""Each wire's event parser, in process, against well-formed JSON of the wrong shape and errors
sent inside the stream: a wrong shape is `StreamInterrupted` (retried like a garbled stream)
naming the event and the field path, a server error is judged alike on every wire, and no
event stream whatsoever ends in any other exception (a property test per wire)."""

from __future__ import annotations

import copy
import itertools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from httpx_sse import ServerSentEvent
from hypothesis import example, given
from hypothesis import strategies as st

from oiexec.core.errors import ContextWindowExceeded, ProviderError
from oiexec.core.types import Message, ModelResponse, Reasoning, ToolCall
from oiexec.providers.answers import retry_after_hint, stream_error_verdict
from oiexec.providers.events import chat, messages, responses
from oiexec.providers.http import StreamInterrupted
from tests.support.model_server import (
    Wire,
    call,
    chat_events,
    custom_call,
    messages_events,
    reply,
    responses_events,
)

Event = dict[str, Any] | str
Parse = Callable[[Iterator[ServerSentEvent]], ModelResponse]

PARSERS: dict[Wire, Parse] = {
    "responses": responses.parse_stream,
    "chat": lambda events: chat.parse_stream(events, custom_tools=frozenset({"apply_patch"})),
    "messages": lambda events: messages.parse_stream(
        events, custom_tools=frozenset({"apply_patch"})
    ),
}
#: One reply with every kind of item each wire has: reasoning, text, a function and a custom
#: call. Its events are what the property test mutates.
FULL = reply(
    "done",
    reasoning="thinking it over",
    encrypted_reasoning="enc-1",
    tool_calls=[
        call("exec_command", {"cmd": "ls"}, call_id="call_1"),
        custom_call("apply_patch", "*** Begin Patch", call_id="call_2"),
    ],
)
WIRES = pytest.mark.parametrize("wire", ["responses", "chat", "messages"])


def valid_events(wire: Wire) -> list[Event]:
    ids = itertools.count(1)
    if wire == "responses":
        return list(responses_events(FULL, model="m", ids=lambda: next(ids)))
    if wire == "chat":
        return chat_events(FULL, model="m", ids=lambda: next(ids))
    return list(messages_events(FULL, model="m", ids=lambda: next(ids)))


def sse(events: Sequence[Event], names: Sequence[str | None] = ()) -> Iterator[ServerSentEvent]:
    """The events as the HTTP layer hands them over: JSON text, named by their `type` unless
    `names` says otherwise."""
    for index, event in enumerate(events):
        data = event if isinstance(event, str) else json.dumps(event)
        name = names[index] if index < len(names) else None
        if name is None and isinstance(event, dict) and isinstance(event.get("type"), str):
            name = event["type"]
        yield ServerSentEvent(event=name or "message", data=data)


def parse(wire: Wire, events: Sequence[Event], names: Sequence[str | None] = ()) -> ModelResponse:
    return PARSERS[wire](sse(events, names))


def interrupted(wire: Wire, events: Sequence[Event]) -> str:
    with pytest.raises(StreamInterrupted) as caught:
        parse(wire, events)
    return caught.value.reason


SHAPE = "stream disconnected before completion: the server sent an event of the wrong shape: "


# --- the valid stream first: the models read everything the runner keeps ---------------------


@WIRES
def test_a_valid_stream_gives_every_item(wire: Wire) -> None:
    response = parse(wire, valid_events(wire))

    kinds = [type(item) for item in response.items]
    assert kinds == [Reasoning, Message, ToolCall, ToolCall]
    assert response.final_text == "done"
    calls = [item for item in response.items if isinstance(item, ToolCall)]
    assert [(c.call_id, c.name, c.call_type) for c in calls] == [
        ("call_1", "exec_command", "function"),
        ("call_2", "apply_patch", "custom"),
    ]
    assert json.loads(calls[0].arguments) == {"cmd": "ls"}
    assert calls[1].arguments == "*** Begin Patch"
    assert response.usage.input_tokens == 10


@WIRES
def test_unknown_event_types_and_extra_fields_are_tolerated(wire: Wire) -> None:
    events = valid_events(wire)
    widened: list[Event] = [{"type": "vendor.new_event", "payload": [1, {"x": None}]}]
    for event in events:
        if isinstance(event, dict):
            event = {**event, "vendor_extra": {"nested": True}}
        widened.append(event)

    assert parse(wire, widened) == parse(wire, events)


# --- wrong shapes: the field path, retried -----------------------------------------------------


def _responses_item(item: Any) -> list[Event]:
    return [{"type": "response.output_item.done", "output_index": 0, "item": item}]


@pytest.mark.parametrize(
    ("events", "path"),
    [
        pytest.param(
            _responses_item("hello"),
            "response.output_item.done: item: expected an object",
            id="item-is-a-string",
        ),
        pytest.param(
            _responses_item({"id": "fc_1", "call_id": "c", "name": "x", "arguments": "{}"}),
            "response.output_item.done: item.type: field required",
            id="item-without-type",
        ),
        pytest.param(
            _responses_item({"type": "function_call", "call_id": "c", "arguments": "{}"}),
            "response.output_item.done: item.name: field required",
            id="call-without-name",
        ),
        pytest.param(
            _responses_item({"type": "function_call", "name": "x", "arguments": "{}"}),
            "response.output_item.done: item.call_id: field required",
            id="call-without-any-id",
        ),
        pytest.param(
            _responses_item({"type": "message", "content": [{"type": "output_text", "text": 5}]}),
            "response.output_item.done: item.content[0].text: expected a string",
            id="text-is-a-number",
        ),
        pytest.param(
            _responses_item({"type": "reasoning", "summary": "thought"}),
            "response.output_item.done: item.summary: expected a list",
            id="summary-is-a-string",
        ),
        pytest.param(
            [{"type": "response.output_item.done"}],
            "response.output_item.done: item: field required",
            id="no-item",
        ),
        pytest.param(
            [{"type": "response.completed", "response": {"usage": {"input_tokens": "many"}}}],
            "response.completed: response.usage.input_tokens: expected an integer",
            id="usage-not-a-number",
        ),
        pytest.param(
            [{"type": "response.completed", "response": {"output": [{"type": "message"}, 7]}}],
            "response.completed: response.output[1]: expected an object",
            id="output-only-in-completed",
        ),
        pytest.param(
            [{"type": "response.created", "response": "resp_1"}],
            "response.created: response: expected an object",
            id="response-is-a-string",
        ),
    ],
)
def test_responses_wrong_shapes_name_the_field(events: list[Event], path: str) -> None:
    assert interrupted("responses", events) == SHAPE + path


@pytest.mark.parametrize(
    ("events", "path"),
    [
        pytest.param([{"choices": "none"}], "choices: expected a list", id="choices-a-string"),
        pytest.param([{"choices": [None]}], "choices[0]: expected an object", id="choice-null"),
        pytest.param(
            [{"choices": [{"delta": "hi"}]}],
            "choices[0].delta: expected an object",
            id="delta-a-string",
        ),
        pytest.param(
            [{"choices": [{"delta": {"content": 42}}]}],
            "choices[0].delta.content: expected a string",
            id="content-a-number",
        ),
        pytest.param(
            [{"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {"a": 1}}}]}}]}],
            "choices[0].delta.tool_calls[0].function.arguments: expected a string",
            id="arguments-an-object",
        ),
        pytest.param(
            [{"choices": [{"delta": {"tool_calls": [{"index": "first"}]}}]}],
            "choices[0].delta.tool_calls[0].index: expected an integer",
            id="index-a-word",
        ),
        pytest.param(
            [{"choices": [], "usage": {"prompt_tokens": 1.5}}],
            "usage.prompt_tokens: expected an integer",
            id="fractional-tokens",
        ),
    ],
)
def test_chat_wrong_shapes_name_the_field(events: list[Event], path: str) -> None:
    reason = interrupted("chat", events)
    assert reason.startswith(SHAPE + "chat.completion.chunk: ")
    assert reason == SHAPE + "chat.completion.chunk: " + path


def test_responses_tolerates_nulls_and_what_it_can_do_without() -> None:
    events: list[Event] = [
        *_responses_item({"type": "reasoning", "summary": [{"text": None}], "content": None}),
        *_responses_item({"type": "function_call", "id": "fc_1", "name": "no_args"}),
        *_responses_item({"type": "web_search_call", "action": ["anything"]}),
        {"type": "response.completed", "response": {"id": None, "usage": None}},
    ]
    response = parse("responses", events)
    assert response.items == (
        Reasoning(summary=("",)),
        ToolCall(call_id="fc_1", name="no_args", arguments=""),
    )


def test_chat_tolerates_null_choices_and_content_parts() -> None:
    events: list[Event] = [
        {"id": "c1", "choices": None},
        {"choices": [{"delta": {"content": [{"type": "thinking", "thinking": []}]}}]},
        {"choices": [{"delta": {"content": [{"type": "text", "text": "hi"}]}}]},
        {"choices": [{"delta": {"reasoning": {"summary": "an object"}}, "finish_reason": "stop"}]},
        "[DONE]",
    ]
    response = parse("chat", events)
    assert response.items == (Message(role="assistant", text="hi"),)
    assert response.response_id == "c1"


def _block(block: Any) -> list[Event]:
    return [{"type": "content_block_start", "index": 0, "content_block": block}]


@pytest.mark.parametrize(
    ("events", "path"),
    [
        pytest.param(
            _block("text"),
            "content_block_start: content_block: expected an object",
            id="block-a-string",
        ),
        pytest.param(
            _block({"text": "hi"}),
            "content_block_start: content_block.type: field required",
            id="block-without-type",
        ),
        pytest.param(
            _block({"type": "tool_use", "id": "t1", "input": {}}),
            "content_block_start: content_block.name: field required",
            id="tool-use-without-name",
        ),
        pytest.param(
            _block({"type": "tool_use", "id": "t1", "name": "x", "input": "ls"}),
            "content_block_start: content_block.input: expected an object",
            id="tool-input-a-string",
        ),
        pytest.param(
            _block({"type": "redacted_thinking"}),
            "content_block_start: content_block.data: field required",
            id="redacted-without-data",
        ),
        pytest.param(
            [{"type": "content_block_delta", "delta": {"type": "text_delta", "text": "a"}}],
            "content_block_delta: index: field required",
            id="delta-without-index",
        ),
        pytest.param(
            [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}],
            "content_block_delta: delta.text: field required",
            id="text-delta-empty",
        ),
        pytest.param(
            [{"type": "content_block_delta", "index": 0, "delta": ["x"]}],
            "content_block_delta: delta: expected an object",
            id="delta-a-list",
        ),
        pytest.param(
            [{"type": "message_delta", "delta": {"stop_reason": 1}}],
            "message_delta: delta.stop_reason: expected a string",
            id="stop-a-number",
        ),
        pytest.param(
            [{"type": "message_start", "message": {"usage": [1]}}],
            "message_start: message.usage: expected an object",
            id="usage-a-list",
        ),
    ],
)
def test_messages_wrong_shapes_name_the_field(events: list[Event], path: str) -> None:
    assert interrupted("messages", events) == SHAPE + path


def test_messages_skips_blocks_and_deltas_it_does_not_keep() -> None:
    events: list[Event] = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "message_stop"},
    ]
    assert parse("messages", events).items == (Message(role="assistant", text="ok"),)


def test_a_wrong_shape_logs_the_raw_event_redacted_and_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from oiexec.core.redact import clear_secrets, register_secret

    register_secret("sk-shape-SECRET-123456")
    try:
        item = {"type": "function_call", "call_id": "c", "arguments": "sk-shape-SECRET-123456"}
        event = {"type": "response.output_item.done", "item": item, "padding": "x" * 5_000}
        with caplog.at_level(logging.DEBUG, logger="oiexec.providers"):
            interrupted("responses", [event])
    finally:
        clear_secrets()
    (record,) = [r for r in caplog.records if r.name == "oiexec.providers"]
    text = record.getMessage()
    assert "response.output_item.done: item.name: field required" in text
    assert '"call_id": "c"' in text and "[REDACTED]" in text
    assert "sk-shape-SECRET" not in text
    assert len(text) < 2_300  # the event is cut, not kept whole


# --- errors inside the stream: one judgement for every wire -----------------------------------


@pytest.mark.parametrize(
    ("code", "message", "verdict"),
    [
        ("server_error", "The server had an error", "retry"),
        ("rate_limit_exceeded", "Rate limit of tokens per min; maximum context length", "retry"),
        ("server_is_overloaded", "busy", "retry"),
        ("slow_down", "slow down", "retry"),
        ("overloaded_error", "Overloaded", "retry"),
        ("api_error", "Internal server error", "retry"),
        ("503", "Service Unavailable", "retry"),
        (None, "something went wrong", "retry"),  # as Codex: unclassified is retried
        ("upstream_error", "Upstream provider returned 502", "retry"),
        ("insufficient_quota", "You exceeded your current quota", "fail"),
        ("insufficient_quota_org", "quota", "fail"),
        ("invalid_request_error", "tools.0: bad schema", "fail"),
        ("invalid_prompt", "flagged", "fail"),
        ("authentication_error", "invalid x-api-key", "fail"),
        ("400", "Bad Request", "fail"),
        ("context_length_exceeded", "too long", "context_overflow"),
        ("invalid_request_error", "prompt is too long: 210000 tokens", "context_overflow"),
        ("413", "Request Entity Too Large", "context_overflow"),
    ],
)
def test_stream_error_verdicts(code: str | None, message: str, verdict: str) -> None:
    assert stream_error_verdict(code, message) == verdict


@pytest.mark.parametrize(
    ("message", "seconds"),
    [
        ("Rate limit reached for gpt-5. Please try again in 1.5s. Visit …", 1.5),
        ("Please try again in 250ms.", 0.25),
        ("Requests to the API have exceeded the limit. Try again in 20 seconds.", 20.0),
        ("try again later", None),
    ],
)
def test_retry_after_hint_reads_the_wait_from_the_message(
    message: str, seconds: float | None
) -> None:
    assert retry_after_hint(message) == seconds


def _error_event(wire: Wire, code: str, message: str) -> list[Event]:
    """Some output first, then the error, as a server that fails mid-answer sends it."""
    if wire == "responses":
        text = {"type": "message", "content": [{"type": "output_text", "text": "partial"}]}
        return [
            *_responses_item(text),
            {"type": "response.failed", "response": {"error": {"code": code, "message": message}}},
        ]
    if wire == "chat":
        return [
            {"choices": [{"delta": {"content": "partial"}}]},
            {"error": {"code": code, "message": message}},
        ]
    return [
        *_block({"type": "text", "text": "partial"}),
        {"type": "error", "error": {"type": code, "message": message}},
    ]


@WIRES
def test_a_transient_error_after_output_is_retried_with_the_servers_wait(wire: Wire) -> None:
    with pytest.raises(StreamInterrupted) as caught:
        parse(wire, _error_event(wire, "rate_limit_exceeded", "Please try again in 1.5s."))
    assert caught.value.retry_after == 1.5
    assert "Please try again in 1.5s." in caught.value.reason


@WIRES
def test_a_final_error_after_output_fails_at_once(wire: Wire) -> None:
    with pytest.raises(ProviderError) as caught:
        parse(wire, _error_event(wire, "insufficient_quota", "You exceeded your current quota"))
    assert not isinstance(caught.value, ContextWindowExceeded)
    assert caught.value.message.startswith("stream disconnected before completion: ")
    assert "You exceeded your current quota" in caught.value.message


@WIRES
def test_a_context_length_error_after_output_is_a_context_window_error(wire: Wire) -> None:
    with pytest.raises(ContextWindowExceeded):
        parse(wire, _error_event(wire, "context_length_exceeded", "Your input is too long"))


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "code": "server_error", "message": "boom"},
        {"type": "error", "error": "boom"},
        {"type": "error", "error": {"message": {"nested": ["boom"]}}},
        {"type": "response.failed", "response": {"error": "boom"}},
        {"type": "response.failed"},
    ],
)
def test_responses_error_events_of_any_shape_are_still_reported(event: dict[str, Any]) -> None:
    # Retried (no code says otherwise), and the server's words are kept, not a shape error.
    reason = interrupted("responses", [event])
    assert "wrong shape" not in reason
    assert "boom" in reason or "without an error message" in reason


# --- the property: any stream ends in a response or a provider error ---------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=10,
)
#: The event names the wires act on, a few they skip, and nonsense.
NAMES = st.sampled_from(
    [
        None,
        "message",
        "error",
        "ping",
        "response.created",
        "response.output_item.done",
        "response.completed",
        "response.failed",
        "response.incomplete",
        "content_block_start",
        "content_block_delta",
        "message_delta",
        "message_start",
        "message_stop",
        "x.y",
    ]
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


@st.composite
def mutated(draw: st.DrawFn, event: Event) -> Any:
    """`event` with one value somewhere in it replaced by any JSON, or removed; or any JSON."""
    if isinstance(event, str) or draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    event = copy.deepcopy(event)
    path = draw(st.sampled_from(list(_paths(event))[1:]))
    parent: Any = event
    for step in path[:-1]:
        parent = parent[step]
    if draw(st.booleans()):
        parent[path[-1]] = draw(JSON)
    else:
        del parent[path[-1]]
    return event


@st.composite
def streams(draw: st.DrawFn, wire: Wire) -> tuple[list[Any], list[str | None]]:
    """A wire's valid stream with some events mutated, some dropped, some added; the SSE
    names as sent, or any of the wire's names."""
    events: list[Any] = []
    for event in valid_events(wire):
        roll = draw(st.integers(0, 9))
        if roll == 0:
            continue
        events.append(draw(mutated(event)) if roll <= 2 else event)
        if draw(st.integers(0, 19)) == 0:
            events.append(draw(JSON))
    names = draw(st.lists(NAMES, max_size=len(events)))
    return events, names


def _holds(wire: Wire, events: list[Any], names: list[str | None]) -> None:
    """The property: a complete response, or the errors the retry machinery handles."""
    try:
        response = PARSERS[wire](sse(events, names))
    except (StreamInterrupted, ProviderError):
        return
    assert isinstance(response, ModelResponse)


# The examples are the internal errors the property found in the parsers before the models
# (AttributeError, TypeError, ValueError, pydantic's ValidationError on ModelResponse), each
# cut down to the event that caused it; the last of each wire are edge cases of the new code
# (an event named by SSE alone, an error that is a number or null).
@given(streams("responses"))
@example(([{"type": "response.created", "response": [1]}], []))
@example(
    ([{"type": "response.output_item.done", "item": {"type": "reasoning", "summary": True}}], [])
)
@example(([{"type": "response.completed", "response": {"status": 5}}], []))
@example(([{"type": "response.output_item.done", "item": {"type": "message", "content": [7]}}], []))
@example(
    ([{"type": 5, "item": "x"}, {"type": "response.completed"}], ["response.output_item.done"])
)
def test_any_responses_stream_ends_in_a_response_or_a_provider_error(
    case: tuple[list[Any], list[str | None]],
) -> None:
    _holds("responses", *case)


@given(streams("chat"))
@example(([{"choices": [None]}, "[DONE]"], []))
@example(([{"choices": [{"delta": {"tool_calls": [{"index": [1]}]}}]}, "[DONE]"], []))
@example(([{"choices": [], "usage": {"prompt_tokens": "many"}}, "[DONE]"], []))
@example(([{"error": 0.5}], []))
def test_any_chat_stream_ends_in_a_response_or_a_provider_error(
    case: tuple[list[Any], list[str | None]],
) -> None:
    _holds("chat", *case)


@given(streams("messages"))
@example(([{"type": "content_block_start", "index": [1], "content_block": {"type": "text"}}], []))
@example(([{"type": "content_block_delta", "index": ":", "delta": {"type": "text_delta"}}], []))
@example(([{"type": "message_delta", "delta": True}, {"type": "message_stop"}], []))
@example(([{"type": "content_block_start", "index": 0, "content_block": 3}], []))
@example(([{"type": "error", "error": None}], []))
def test_any_messages_stream_ends_in_a_response_or_a_provider_error(
    case: tuple[list[Any], list[str | None]],
) -> None:
    _holds("messages", *case)
