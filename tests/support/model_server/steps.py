"""The scripted steps: what the model server answers a model request with, and the helpers
that build them. A step is data only; `handler.py` plays it over HTTP on whichever wire the
request came in on."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias


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


KeepaliveKind: TypeAlias = Literal["comment", "blank", "event"]


@dataclass(frozen=True)
class Keepalive:
    """Stream the first `after_events` events of `reply`, then only keepalives every `every`
    seconds for `seconds` (None: until the client hangs up), then the rest of `reply`.
    `kind`: `comment` (`: ping`), `blank` (an empty line) or `event`, the wire's own
    keepalive event (Messages `ping`, Responses `keepalive`; Chat has none and gets the
    comment OpenRouter sends)."""

    seconds: float | None
    every: float
    kind: KeepaliveKind
    after_events: int
    reply: Reply


@dataclass(frozen=True)
class Interim:
    """Before any response headers, an interim `102 Processing` every `every` seconds for
    `seconds` (None: until the client hangs up), then play `then` (if the client is still
    there). A proxy's way of keeping a request open that has no answer yet. `drip`: instead,
    the head of a 200 one byte every `every` seconds, in a header line that never ends (then
    the connection is closed; `then` is not played)."""

    seconds: float | None
    every: float
    then: Reply | None
    drip: bool = False


@dataclass(frozen=True)
class RawBody:
    """Exactly `body`, with this status and content type (chunked). `complete=False` cuts
    the connection after it, as a failing proxy would."""

    body: bytes
    content_type: str = "text/event-stream; charset=utf-8"
    status: int = 200
    complete: bool = True


Step: TypeAlias = (
    "Reply | Fault | Drop | Stall | Failed | RawEvents | Hang | Drip | RawBody | Keepalive"
    " | Interim | Callable[[dict[str, Any]], Step]"
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


def keepalive(
    seconds: float | None = None,
    *,
    every: float = 0.05,
    kind: KeepaliveKind = "comment",
    after_events: int = 1,
    reply: Reply | None = None,
) -> Keepalive:
    """Keepalives instead of an answer: forever by default, else for `seconds` and then the
    rest of `reply` (which then succeeds if the client waited)."""
    return Keepalive(seconds, every, kind, after_events, reply or Reply(text="kept alive"))


def interim(
    seconds: float | None = None,
    *,
    every: float = 0.05,
    then: Reply | None = None,
    drip: bool = False,
) -> Interim:
    return Interim(seconds, every, then, drip)
