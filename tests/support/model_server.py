"""A scripted OpenAI-compatible model server on 127.0.0.1 for tests.

It speaks the Responses wire (`POST …/responses`), Chat Completions
(`POST …/chat/completions`) and Anthropic Messages (`POST …/messages`), all streamed as SSE
shaped like the real APIs, and answers each model request with the next scripted step:

    with running_model_server() as server:
        server.enqueue(
            reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]),
            fault(status=429, retry_after=0),          # retried by the client
            reply("done", usage=usage(input_tokens=50, output_tokens=3)),
        )
        provider = server.provider_config()            # or server.config_args() for the CLI
        ...
        assert tool_outputs(server.bodies[-1])         # what the model was sent

Steps: `reply`, `fault`, `drop_after`, `stall`, `failed`, `raw_events`, or a callable taking
the parsed request body and returning one of those. An empty queue answers HTTP 500 with a
message naming the problem, so a test fails loudly instead of hanging.

Fault injection below the level of events: `hang` (no response headers for a while), `drip`
(a reply in small slices with pauses, split mid-event), `raw_body` (any bytes with any
content type and status: garbled SSE, truncated JSON, an HTML page answering 200).
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeAlias
from urllib.parse import parse_qsl, urlsplit

import pytest

from oiexec.config.settings import ProviderConfig

__all__ = [
    "CustomCall",
    "Drip",
    "Drop",
    "Failed",
    "Fault",
    "FunctionCall",
    "Hang",
    "ModelServer",
    "RawBody",
    "RawEvents",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "Stall",
    "Step",
    "TokenUsage",
    "apply_patch_call",
    "call",
    "custom_call",
    "drip",
    "drop_after",
    "failed",
    "fault",
    "hang",
    "messages_events",
    "model_server",
    "raw_body",
    "raw_events",
    "reply",
    "running_model_server",
    "stall",
    "tool_names",
    "tool_outputs",
    "usage",
    "user_texts",
]

Wire = Literal["responses", "chat", "messages"]


# ---------------------------------------------------------------------------------------------
# Steps


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 10
    cached_input_tokens: int = 0
    output_tokens: int = 5
    reasoning_output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class FunctionCall:
    name: str
    arguments: str
    call_id: str | None = None


@dataclass(frozen=True)
class CustomCall:
    """A freeform tool call (Responses `custom_tool_call`); on the chat wire it becomes a
    function call with arguments `{"input": <raw text>}`."""

    name: str
    input: str
    call_id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One complete model response. Items stream in the order reasoning, text, tool calls."""

    text: str | None = None
    tool_calls: tuple[FunctionCall | CustomCall, ...] = ()
    #: Responses: the reasoning summary; Chat: streamed as `reasoning_content`;
    #: Messages: a thinking block.
    reasoning: str | None = None
    #: Responses: the opaque `encrypted_content` of the reasoning item; Messages: the thinking
    #: block's signature (a generated one when unset).
    encrypted_reasoning: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    response_id: str | None = None


@dataclass(frozen=True)
class Fault:
    """An HTTP error response instead of a stream."""

    status: int = 500
    retry_after: float | str | None = None
    message: str | None = None
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop:
    """Stream the first `after_events` SSE events of `reply`, then close the connection."""

    after_events: int
    reply: Reply


@dataclass(frozen=True)
class Stall:
    """Stream `after_events` events, go silent for `seconds`, then send the rest (if the
    client is still there)."""

    seconds: float
    after_events: int
    reply: Reply


@dataclass(frozen=True)
class Failed:
    """Responses: `response.failed` with this error; Chat: an `{"error": …}` chunk;
    Messages: an `error` event whose error type is `code`."""

    message: str = "The server had an error while processing your request."
    code: str = "server_error"


@dataclass(frozen=True)
class RawEvents:
    """Exactly these SSE events (dicts are JSON-encoded; a dict's `type` names the event)."""

    events: tuple[Mapping[str, Any] | str, ...]


@dataclass(frozen=True)
class Hang:
    """Read the request, then send nothing at all (not even headers) for `seconds`, then
    play `then` if the client is still there (it has usually given up by then)."""

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class Drip:
    """Stream `reply` in slices of `size` bytes with `every` seconds between them: slices
    cut events, JSON and lines anywhere, and the whole stream may take longer than the idle
    timeout while no single pause does."""

    reply: Reply
    every: float
    size: int


@dataclass(frozen=True)
class RawBody:
    """Exactly `body`, with this status and content type (chunked). `complete=False` cuts
    the connection after it, as a failing proxy would."""

    body: bytes
    content_type: str = "text/event-stream; charset=utf-8"
    status: int = 200
    complete: bool = True


Step: TypeAlias = (
    "Reply | Fault | Drop | Stall | Failed | RawEvents | Hang | Drip | RawBody"
    " | Callable[[dict[str, Any]], Step]"
)


def usage(
    input_tokens: int = 10,
    output_tokens: int = 5,
    *,
    cached_input_tokens: int = 0,
    reasoning_output_tokens: int = 0,
) -> TokenUsage:
    return TokenUsage(input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens)


def call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, call_id: str | None = None
) -> FunctionCall:
    """A function tool call; `arguments` is JSON-encoded unless already a string."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return FunctionCall(name, encoded, call_id)


def custom_call(name: str, input: str, *, call_id: str | None = None) -> CustomCall:
    return CustomCall(name, input, call_id)


def apply_patch_call(patch: str, *, call_id: str | None = None) -> CustomCall:
    """The freeform `apply_patch` call Codex models make, with the raw patch text."""
    return CustomCall("apply_patch", patch, call_id)


def reply(
    text: str | None = None,
    *,
    tool_calls: Sequence[FunctionCall | CustomCall] = (),
    reasoning: str | None = None,
    encrypted_reasoning: str | None = None,
    usage: TokenUsage | None = None,
    response_id: str | None = None,
) -> Reply:
    return Reply(
        text=text,
        tool_calls=tuple(tool_calls),
        reasoning=reasoning,
        encrypted_reasoning=encrypted_reasoning,
        usage=usage or TokenUsage(),
        response_id=response_id,
    )


def fault(
    status: int = 500,
    *,
    retry_after: float | str | None = None,
    message: str | None = None,
    body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Fault:
    """An HTTP error. `body` replaces the default `{"error": {"message": …}}` JSON body."""
    return Fault(status, retry_after, message, body, dict(headers or {}))


def drop_after(n_events: int, reply: Reply | None = None) -> Drop:
    return Drop(n_events, reply or Reply(text="this stream is cut short"))


def stall(seconds: float, *, after_events: int = 1, reply: Reply | None = None) -> Stall:
    return Stall(seconds, after_events, reply or Reply(text="this stream stalls"))


def failed(
    message: str = "The server had an error while processing your request.",
    code: str = "server_error",
) -> Failed:
    return Failed(message, code)


def raw_events(*events: Mapping[str, Any] | str) -> RawEvents:
    return RawEvents(tuple(events))


def hang(seconds: float, then: Reply | None = None) -> Hang:
    return Hang(seconds, then)


def drip(reply: Reply | None = None, *, every: float = 0.01, size: int = 16) -> Drip:
    return Drip(reply or Reply(text="slowly but surely"), every, size)


def raw_body(
    body: str | bytes,
    *,
    content_type: str = "text/event-stream; charset=utf-8",
    status: int = 200,
    complete: bool = True,
) -> RawBody:
    data = body.encode() if isinstance(body, str) else body
    return RawBody(data, content_type, status, complete)


# ---------------------------------------------------------------------------------------------
# Reading request bodies (either wire)


def tool_outputs(body: Mapping[str, Any]) -> dict[str, str]:
    """call_id -> output of every tool result in a request body (Responses, Chat, Messages)."""
    outputs: dict[str, str] = {}
    for item in body.get("input") or []:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            outputs[item["call_id"]] = _text_of(item.get("output"))
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            outputs[message["tool_call_id"]] = _text_of(message.get("content"))
        for block in _blocks_of(message, "tool_result"):
            outputs[block["tool_use_id"]] = _text_of(block.get("content"))
    return outputs


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """The text of every user message in a request body (Responses, Chat, Messages; a
    Messages user turn holding only tool results has no text and is skipped)."""
    texts: list[str] = []
    for item in body.get("input") or []:
        if item.get("type", "message") == "message" and item.get("role") == "user":
            texts.append(_text_of(item.get("content")))
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        if _blocks_of(message, "tool_result"):
            text_blocks = _blocks_of(message, "text")
            if text_blocks:
                texts.append(_text_of(text_blocks))
        else:
            texts.append(_text_of(message.get("content")))
    return texts


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools offered in a request body (Responses, Chat, Messages)."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        names.append(str(name or tool.get("type")))
    return names


def _blocks_of(message: Mapping[str, Any], block_type: str) -> list[dict[str, Any]]:
    """The content blocks of `block_type` in a Messages-style message."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == block_type]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


# ---------------------------------------------------------------------------------------------
# The script and the request log


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any

    @property
    def wire(self) -> Wire | None:
        if self.method != "POST":
            return None
        if self.path.endswith("/chat/completions"):
            return "chat"
        if self.path.endswith("/responses"):
            return "responses"
        if self.path.endswith("/messages"):
            return "messages"
        return None


class ScriptedModel:
    """A queue of steps and the log of every request. Thread-safe."""

    def __init__(self, *steps: Step) -> None:
        self._lock = threading.Lock()
        self._steps: deque[Step] = deque(steps)
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._served = 0
        self._ids = itertools.count(1)
        #: Per-conversation scripts for concurrent clients (batch tasks): marker -> steps.
        self._routes: dict[str, deque[Step]] = {}
        #: Seconds every model request waits before it is answered (benchmarks).
        self.delay_s = 0.0

    def enqueue(self, *steps: Step) -> ScriptedModel:
        with self._lock:
            self._steps.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, GETs included."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Only the model calls (`POST …/responses`, `…/chat/completions`, `…/messages`)."""
        return [r for r in self.requests if r.wire is not None]

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.model_requests]

    @property
    def errors(self) -> list[str]:
        """Problems the server answered with 500 (script exhausted, a step that raised)."""
        with self._lock:
            return list(self._errors)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def route(self, marker: str, *steps: Step) -> ScriptedModel:
        """Script one conversation of several that run at once: a request whose body contains
        `marker` (put it in that task's prompt) takes its steps from this queue, whatever
        order the concurrent requests arrive in."""
        with self._lock:
            self._routes.setdefault(marker, deque()).extend(steps)
        return self

    def routed_remaining(self, marker: str) -> int:
        with self._lock:
            return len(self._routes.get(marker, ()))

    def take(self, request: RecordedRequest) -> Step | str:
        """The next step, or an error message when there is none."""
        text = json.dumps(request.body) if self._routes else ""
        with self._lock:
            self._served += 1
            for marker, queue in self._routes.items():
                if marker in text:
                    if queue:
                        return queue.popleft()
                    message = f"ScriptedModel: no scripted step left for route {marker!r}"
                    self._errors.append(message)
                    return message
            if self._steps:
                return self._steps.popleft()
            message = (
                f"ScriptedModel: no scripted step left for model request #{self._served} "
                f"({request.method} {request.path}); the test scripted {self._served - 1}. "
                "Enqueue more steps or check why the client asked again."
            )
            self._errors.append(message)
            return message

    def note_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)


# ---------------------------------------------------------------------------------------------
# SSE rendering of a Reply


def _split(text: str, pieces: int = 3) -> list[str]:
    """Stream text in a few deltas, so clients must accumulate."""
    if len(text) < pieces:
        return [text] if text else []
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def responses_events(step: Reply, *, model: str, ids: Callable[[], int]) -> list[dict[str, Any]]:
    """The Responses SSE events for `step`, as the real API sends them."""
    response_id = step.response_id or f"resp_{ids()}"
    events: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    base = {"id": response_id, "object": "response", "model": model, "created_at": 0}
    events.append(
        {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}}
    )
    if step.reasoning is not None or step.encrypted_reasoning is not None:
        item_id = f"rs_{ids()}"
        index = len(output)
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {"id": item_id, "type": "reasoning", "summary": []},
            }
        )
        summary = []
        if step.reasoning is not None:
            part: dict[str, Any] = {"type": "summary_text", "text": ""}
            events.append(
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": item_id,
                    "output_index": index,
                    "summary_index": 0,
                    "part": part,
                }
            )
            for delta in _split(step.reasoning):
                events.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item_id,
                        "output_index": index,
                        "summary_index": 0,
                        "delta": delta,
                    }
                )
            events.append(
                {
                    "type": "response.reasoning_summary_text.done",
                    "item_id": item_id,
                    "output_index": index,
                    "summary_index": 0,
                    "text": step.reasoning,
                }
            )
            summary = [{"type": "summary_text", "text": step.reasoning}]
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summary}
        if step.encrypted_reasoning is not None:
            item["encrypted_content"] = step.encrypted_reasoning
        output.append(item)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    if step.text is not None:
        item_id = f"msg_{ids()}"
        index = len(output)
        added = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress"}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**added, "content": []},
            }
        )
        events.append(
            {
                "type": "response.content_part.added",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            }
        )
        for delta in _split(step.text):
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item_id,
                    "output_index": index,
                    "content_index": 0,
                    "delta": delta,
                }
            )
        part = {"type": "output_text", "text": step.text, "annotations": []}
        events.append(
            {
                "type": "response.output_text.done",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "text": step.text,
            }
        )
        events.append(
            {
                "type": "response.content_part.done",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": part,
            }
        )
        item = {**added, "status": "completed", "content": [part]}
        output.append(item)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    for tool_call in step.tool_calls:
        index = len(output)
        call_id = tool_call.call_id or f"call_{ids()}"
        if isinstance(tool_call, FunctionCall):
            item_id, field_name, value = f"fc_{ids()}", "arguments", tool_call.arguments
            item_type, delta_type = "function_call", "response.function_call_arguments"
        else:
            item_id, field_name, value = f"ctc_{ids()}", "input", tool_call.input
            item_type, delta_type = "custom_tool_call", "response.custom_tool_call_input"
        head = {"id": item_id, "type": item_type, "call_id": call_id, "name": tool_call.name}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**head, "status": "in_progress", field_name: ""},
            }
        )
        for delta in _split(value):
            events.append(
                {
                    "type": f"{delta_type}.delta",
                    "item_id": item_id,
                    "output_index": index,
                    "delta": delta,
                }
            )
        events.append(
            {
                "type": f"{delta_type}.done",
                "item_id": item_id,
                "output_index": index,
                field_name: value,
            }
        )
        item = {**head, "status": "completed", field_name: value}
        output.append(item)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    tokens = step.usage
    events.append(
        {
            "type": "response.completed",
            "response": {
                **base,
                "status": "completed",
                "output": output,
                "usage": {
                    "input_tokens": tokens.input_tokens,
                    "input_tokens_details": {"cached_tokens": tokens.cached_input_tokens},
                    "output_tokens": tokens.output_tokens,
                    "output_tokens_details": {"reasoning_tokens": tokens.reasoning_output_tokens},
                    "total_tokens": tokens.total_tokens,
                },
            },
        }
    )
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def chat_events(step: Reply, *, model: str, ids: Callable[[], int]) -> list[dict[str, Any] | str]:
    """The Chat Completions chunks for `step`, ending with a usage chunk and `[DONE]`."""
    chunk_id = step.response_id or f"chatcmpl-{ids()}"

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    for delta in _split(step.reasoning or ""):
        events.append(chunk({"reasoning_content": delta}))
    for delta in _split(step.text or ""):
        events.append(chunk({"content": delta}))
    for index, tool_call in enumerate(step.tool_calls):
        arguments = (
            tool_call.arguments
            if isinstance(tool_call, FunctionCall)
            else json.dumps({"input": tool_call.input})
        )
        opening = {
            "index": index,
            "id": tool_call.call_id or f"call_{ids()}",
            "type": "function",
            "function": {"name": tool_call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [opening]}))
        for piece in _split(arguments):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    events.append(chunk({}, "tool_calls" if step.tool_calls else "stop"))
    tokens = step.usage
    events.append(
        {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": tokens.input_tokens,
                "completion_tokens": tokens.output_tokens,
                "total_tokens": tokens.total_tokens,
                "prompt_tokens_details": {"cached_tokens": tokens.cached_input_tokens},
                "completion_tokens_details": {"reasoning_tokens": tokens.reasoning_output_tokens},
            },
        }
    )
    events.append("[DONE]")
    return events


def _message_start(message_id: str, model: str, tokens: TokenUsage) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                # Anthropic counts cache reads apart from input_tokens.
                "input_tokens": tokens.input_tokens - tokens.cached_input_tokens,
                "cache_read_input_tokens": tokens.cached_input_tokens,
                "cache_creation_input_tokens": 0,
                "output_tokens": 1,
            },
        },
    }


def messages_events(step: Reply, *, model: str, ids: Callable[[], int]) -> list[dict[str, Any]]:
    """The Anthropic Messages SSE events for `step`: thinking, text, then tool_use blocks."""
    events: list[dict[str, Any]] = [
        _message_start(step.response_id or f"msg_{ids()}", model, step.usage),
        {"type": "ping"},
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
        )
        events.append({"type": "content_block_stop", "index": index})
        index += 1

    if step.reasoning is not None:
        signature = step.encrypted_reasoning or f"sig_{ids()}"
        deltas = [{"type": "thinking_delta", "thinking": d} for d in _split(step.reasoning)]
        deltas.append({"type": "signature_delta", "signature": signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    elif step.encrypted_reasoning is not None:
        block({"type": "redacted_thinking", "data": step.encrypted_reasoning}, [])
    if step.text is not None:
        block(
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": d} for d in _split(step.text)],
        )
    for tool_call in step.tool_calls:
        arguments = (
            tool_call.arguments
            if isinstance(tool_call, FunctionCall)
            else json.dumps({"input": tool_call.input})
        )
        start = {
            "type": "tool_use",
            "id": tool_call.call_id or f"toolu_{ids()}",
            "name": tool_call.name,
            "input": {},
        }
        block(start, [{"type": "input_json_delta", "partial_json": p} for p in _split(arguments)])
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "tool_use" if step.tool_calls else "end_turn",
                "stop_sequence": None,
            },
            "usage": {"output_tokens": step.usage.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _failed_events(step: Failed, wire: Wire, *, model: str, ids: Callable[[], int]) -> list[Any]:
    error = {"code": step.code, "message": step.message}
    if wire == "chat":
        return [{"error": {**error, "type": step.code}}]
    if wire == "messages":
        return [
            _message_start(f"msg_{ids()}", model, TokenUsage()),
            {"type": "error", "error": {"type": step.code, "message": step.message}},
        ]
    response = {"id": f"resp_{ids()}", "object": "response", "model": model}
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.failed", "response": {**response, "status": "failed", "error": error}},
    ]


def _encode_event(event: Mapping[str, Any] | str, wire: Wire) -> bytes:
    if isinstance(event, str):
        return f"data: {event}\n\n".encode()
    data = json.dumps(event, separators=(",", ":"))
    if wire in ("responses", "messages") and "type" in event:
        return f"event: {event['type']}\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()


# ---------------------------------------------------------------------------------------------
# The HTTP server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # -- routing --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        request = self._record(body=None)
        if self.headers.get("upgrade", "").lower() == "websocket":
            # Codex tries a WebSocket first; refusing at once makes it fall back to HTTPS.
            self.close_connection = True
            self._send_json(404, _error_body("WebSocket is not supported here", "not_found"))
        elif request.path.endswith("/models"):
            self._send_json(200, {"object": "list", "data": []})
        else:
            self._send_json(404, _error_body(f"no such endpoint: GET {request.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._record(body=raw.decode("utf-8", errors="replace"))
            self._send_json(400, _error_body("request body is not JSON", "invalid_json"))
            return
        request = self._record(body=body)
        wire = request.wire
        if wire is None:
            self._send_json(404, _error_body(f"no such endpoint: POST {request.path}", "not_found"))
            return
        model = self.server.owner.model
        if model.delay_s:
            time.sleep(model.delay_s)
        step = model.take(request)
        if isinstance(step, str):
            self._send_json(500, _error_body(step, "scripted_model_exhausted"))
            return
        try:
            while callable(step):
                step = step(body if isinstance(body, dict) else {})
        except Exception:
            message = f"ScriptedModel: a callable step raised:\n{traceback.format_exc()}"
            model.note_error(message)
            self._send_json(500, _error_body(message, "scripted_step_raised"))
            return
        self._play(step, wire, str((body or {}).get("model") or "scripted-model"))

    # -- playing steps --------------------------------------------------------------------------

    def _play(self, step: Step, wire: Wire, model_name: str) -> None:
        ids = self.server.owner.model.next_id
        if isinstance(step, Fault):
            self._send_fault(step)
        elif isinstance(step, Reply):
            self._stream(self._render(step, wire, model_name))
        elif isinstance(step, Drop):
            events = self._render(step.reply, wire, model_name)
            self._stream(events[: step.after_events], complete=False)
        elif isinstance(step, Stall):
            events = self._render(step.reply, wire, model_name)
            self._stream(events, pause_after=step.after_events, pause=step.seconds)
        elif isinstance(step, Failed):
            self._stream(_failed_events(step, wire, model=model_name, ids=ids))
        elif isinstance(step, RawEvents):
            self._stream(list(step.events))
        elif isinstance(step, Hang):
            if not self.server.owner.stopping.wait(step.seconds) and step.then is not None:
                with suppress(OSError):
                    self._stream(self._render(step.then, wire, model_name))
            self.close_connection = True
        elif isinstance(step, Drip):
            self._drip(step, wire, model_name)
        elif isinstance(step, RawBody):
            self._send_raw(step)
        else:
            message = f"ScriptedModel: not a scripted step: {step!r}"
            self.server.owner.model.note_error(message)
            self._send_json(500, _error_body(message, "scripted_step_invalid"))

    def _render(self, step: Reply, wire: Wire, model_name: str) -> list[Any]:
        ids = self.server.owner.model.next_id
        if wire == "chat":
            return chat_events(step, model=model_name, ids=ids)
        if wire == "messages":
            return list(messages_events(step, model=model_name, ids=ids))
        return list(responses_events(step, model=model_name, ids=ids))

    def _send_fault(self, step: Fault) -> None:
        message = step.message or f"scripted fault {step.status}"
        if step.body is not None:
            body = dict(step.body)
        elif self._path_wire() == "messages":
            body = _anthropic_error_body(message, step.status)
        else:
            body = _error_body(message, _code(step.status))
        headers = dict(step.headers)
        if step.retry_after is not None:
            headers["Retry-After"] = str(step.retry_after)
        self._send_json(step.status, body, headers)

    def _stream(
        self,
        events: list[Any],
        *,
        complete: bool = True,
        pause_after: int | None = None,
        pause: float = 0.0,
    ) -> None:
        wire = self._path_wire()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stopping = self.server.owner.stopping
        try:
            for number, event in enumerate(events):
                if number == pause_after and stopping.wait(pause):
                    complete = False
                    break
                self._write_chunk(_encode_event(event, wire))
            if pause_after is not None and pause_after >= len(events) and stopping.wait(pause):
                complete = False
            if complete:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        # A dropped stream: close without the terminating chunk, as a failing proxy would.
        self.close_connection = True
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _drip(self, step: Drip, wire: Wire, model_name: str) -> None:
        data = b"".join(_encode_event(e, wire) for e in self._render(step.reply, wire, model_name))
        self._start_chunked(200, "text/event-stream; charset=utf-8")
        stopping = self.server.owner.stopping
        try:
            for start in range(0, len(data), step.size):
                if start and stopping.wait(step.every):
                    break
                self._write_chunk(data[start : start + step.size])
            else:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _send_raw(self, step: RawBody) -> None:
        self._start_chunked(step.status, step.content_type)
        try:
            if step.body:
                self._write_chunk(step.body)
            if step.complete:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _start_chunked(self, status: int, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _hang_up(self) -> None:
        """Close without the terminating chunk."""
        self.close_connection = True
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _path_wire(self) -> Wire:
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            return "chat"
        if path.endswith("/messages"):
            return "messages"
        return "responses"

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _record(self, body: Any) -> RecordedRequest:
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query)),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        self.server.owner.model.record(request)
        return request


def _error_body(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


def _anthropic_error_body(message: str, status: int) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _code(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "invalid_api_key",
        403: "permission_denied",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: ModelServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on kept-alive or abandoned connections all the time; only
        # anything else is worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ModelServer:
    """A `ScriptedModel` served over HTTP on 127.0.0.1 from a background thread."""

    def __init__(self, model: ScriptedModel | None = None) -> None:
        self.model = model or ScriptedModel()
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ModelServer:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes stalled streams
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (no path)."""
        if self._server is None:
            raise RuntimeError("ModelServer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The provider base URL, `http://127.0.0.1:<port>/v1`."""
        return f"{self.url}/v1"

    # Delegates, so tests can talk to the server alone.
    def enqueue(self, *steps: Step) -> ModelServer:
        self.model.enqueue(*steps)
        return self

    def route(self, marker: str, *steps: Step) -> ModelServer:
        self.model.route(marker, *steps)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.model.requests

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return self.model.model_requests

    @property
    def bodies(self) -> list[Any]:
        return self.model.bodies

    @property
    def remaining(self) -> int:
        return self.model.remaining

    def provider_config(self, wire_api: Wire = "responses", **overrides: Any) -> ProviderConfig:
        """A provider pointing here: no API key, small idle timeout, no retry waits needed."""
        fields: dict[str, Any] = {
            "name": "Scripted",
            "base_url": self.base_url,
            "env_key": None,
            "wire_api": wire_api,
            "stream_idle_timeout_ms": 10_000,
        }
        fields.update(overrides)
        return ProviderConfig(**fields)

    def config_args(
        self, provider_id: str = "scripted", wire_api: Wire = "responses", **fields: Any
    ) -> list[str]:
        """`-c` flags for `interpreter exec` selecting a provider that points here,
        e.g. `config_args(request_max_retries=0, env_key="SCRIPTED_KEY")`."""
        values: dict[str, Any] = {
            "name": "Scripted",
            "base_url": self.base_url,
            "wire_api": wire_api,
            "stream_idle_timeout_ms": 10_000,
        }
        values.update(fields)
        args = ["-c", f"model_provider={json.dumps(provider_id)}"]
        for key, value in values.items():
            args += ["-c", f"model_providers.{provider_id}.{key}={_toml_value(value)}"]
        return args


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


@contextmanager
def running_model_server(*steps: Step) -> Iterator[ModelServer]:
    """A started `ModelServer` with `steps` queued; stopped on exit."""
    server = ModelServer(ScriptedModel(*steps))
    with server:
        yield server


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """pytest fixture: a running `ModelServer` with an empty script."""
    with running_model_server() as server:
        yield server
