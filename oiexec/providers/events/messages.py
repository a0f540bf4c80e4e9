"""The Anthropic Messages wire's SSE events, read into typed models, and the accumulator that
turns them into a complete `ModelResponse` (complete at `message_stop`).

Content blocks are indexed; each starts with `content_block_start` and grows by
`content_block_delta`s. Blocks and deltas of types the runner does not keep (server-side
tools, citations, new ones) are skipped; those it keeps must have the fields it reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from httpx_sse import ServerSentEvent

from oiexec.core.events import Usage
from oiexec.core.types import HistoryItem, Message, ModelResponse, Reasoning, ToolCall
from oiexec.providers.custom_tools import unwrap_input
from oiexec.providers.events.base import ErrorBody, Text, WireModel, read, stream_failure
from oiexec.providers.http import StreamInterrupted, json_event

__all__ = ["parse_stream"]


class _Typed(WireModel):
    type: str


class _TextBlock(WireModel):
    text: str | None = None


class _ThinkingBlock(WireModel):
    thinking: str | None = None
    signature: str | None = None


class _RedactedThinkingBlock(WireModel):
    data: str


class _ToolUseBlock(WireModel):
    id: str
    name: str
    input: dict[str, Any] | None = None


_BLOCKS: dict[str, type[WireModel]] = {
    "text": _TextBlock,
    "thinking": _ThinkingBlock,
    "redacted_thinking": _RedactedThinkingBlock,
    "tool_use": _ToolUseBlock,
}


class _TextDelta(WireModel):
    text: str

    def piece(self) -> str:
        return self.text


class _InputJsonDelta(WireModel):
    partial_json: str

    def piece(self) -> str:
        return self.partial_json


class _ThinkingDelta(WireModel):
    thinking: str

    def piece(self) -> str:
        return self.thinking


class _SignatureDelta(WireModel):
    signature: str

    def piece(self) -> str:
        return self.signature


_DELTAS: dict[str, type[_TextDelta | _InputJsonDelta | _ThinkingDelta | _SignatureDelta]] = {
    "text_delta": _TextDelta,
    "input_json_delta": _InputJsonDelta,
    "thinking_delta": _ThinkingDelta,
    "signature_delta": _SignatureDelta,
}


class _Indexed(WireModel):
    index: int


class _BlockStart(_Indexed):
    content_block: Any  # required; its own shape is read per type


class _BlockDelta(_Indexed):
    delta: Any  # required; its own shape is read per type


class _MessageInfo(WireModel):
    id: Text = None
    usage: dict[str, Any] | None = None


class _MessageStart(WireModel):
    message: _MessageInfo | None = None


class _StopDelta(WireModel):
    stop_reason: str | None = None


class _MessageDelta(WireModel):
    delta: _StopDelta | None = None
    usage: dict[str, Any] | None = None


class _ErrorEvent(WireModel):
    error: ErrorBody | None = None


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    data: str = ""


@dataclass
class _MessagesAccumulator:
    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    message_id: str | None = None
    stop_reason: str | None = None

    def add(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "message_start":
            message = read(_MessageStart, event, event=kind).message or _MessageInfo()
            self.message_id = message.id
            self._add_usage(message.usage or {})
        elif kind == "content_block_start":
            start = read(_BlockStart, event, event=kind)
            self.blocks[start.index] = _started(kind, start.content_block)
        elif kind == "content_block_delta":
            delta = read(_BlockDelta, event, event=kind)
            self._delta(kind, delta.index, delta.delta)
        elif kind == "message_delta":
            message_delta = read(_MessageDelta, event, event=kind)
            stop = message_delta.delta.stop_reason if message_delta.delta else None
            if stop:
                self.stop_reason = stop
            self._add_usage(message_delta.usage or {})

    def _add_usage(self, raw: dict[str, Any]) -> None:
        # message_delta repeats counts cumulatively, so later values replace earlier ones.
        for key, value in raw.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = max(0, value)

    def _delta(self, kind: str, index: int, raw: Any) -> None:
        delta_type = read(_Typed, raw, event=kind, root="delta").type
        model = _DELTAS.get(delta_type)
        if model is None:
            return  # citations and other deltas the runner does not keep
        piece = read(model, raw, event=kind, root="delta").piece()
        block = self.blocks.setdefault(index, _Block(type="text"))
        (block.signature if delta_type == "signature_delta" else block.text).append(piece)

    def response(self, custom_tools: frozenset[str]) -> ModelResponse:
        items: list[HistoryItem] = []
        for index in sorted(self.blocks):
            item = _item(self.blocks[index], custom_tools)
            if item is not None:
                items.append(item)
        return ModelResponse(
            items=tuple(items),
            usage=_usage(self.usage),
            response_id=self.message_id,
            finish_reason=self.stop_reason,
        )


def _started(kind: str, raw: Any) -> _Block:
    block_type = read(_Typed, raw, event=kind, root="content_block").type
    model = _BLOCKS.get(block_type)
    if model is None:
        return _Block(type=block_type)  # server-side tool blocks and new types: not kept
    block = read(model, raw, event=kind, root="content_block")
    started = _Block(type=block_type)
    if isinstance(block, _TextBlock) and block.text:
        started.text.append(block.text)
    elif isinstance(block, _ThinkingBlock):
        if block.thinking:
            started.text.append(block.thinking)
        if block.signature:
            started.signature.append(block.signature)
    elif isinstance(block, _RedactedThinkingBlock):
        started.data = block.data
    elif isinstance(block, _ToolUseBlock):
        started.call_id, started.name = block.id, block.name
        if block.input:
            started.text.append(json.dumps(block.input))
    return started


def _item(block: _Block, custom_tools: frozenset[str]) -> HistoryItem | None:
    text = "".join(block.text)
    if block.type == "text":
        return Message(role="assistant", text=text) if text else None
    if block.type == "thinking":
        return Reasoning(content=text, encrypted_content="".join(block.signature))
    if block.type == "redacted_thinking":
        return Reasoning(encrypted_content=block.data)
    if block.type == "tool_use":
        if block.name in custom_tools:
            return ToolCall(
                call_id=block.call_id,
                name=block.name,
                arguments=unwrap_input(text),
                call_type="custom",
            )
        return ToolCall(call_id=block.call_id, name=block.name, arguments=text or "{}")
    return None  # server-side tool blocks and unknown types are the server's business


def parse_stream(
    events: Iterator[ServerSentEvent], *, custom_tools: frozenset[str] = frozenset()
) -> ModelResponse:
    """Accumulate Messages events into a complete response; complete at `message_stop`.

    An `error` event is judged as every wire judges an error inside a stream
    (`answers.stream_error_verdict`): `overloaded_error`, `api_error` and rate limits are
    retried, a request too long is a context-window error, anything else is final."""
    acc = _MessagesAccumulator()
    for event in events:
        if not event.data:
            continue
        payload = json_event(event.data)
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if not isinstance(kind, str) or not kind:
            kind = event.event
        if kind == "error":
            error = read(_ErrorEvent, payload, event=kind).error or ErrorBody()
            message = error.message or "an error event without a message"
            code = error.type or error.code or "error"
            raise stream_failure(code, message, shown=f"{code}: {message}")
        if kind == "message_stop":
            return acc.response(custom_tools)
        acc.add(kind, payload)
    raise StreamInterrupted("stream closed before message_stop")


def _usage(raw: dict[str, int]) -> Usage:
    # Anthropic's input_tokens excludes cache reads and writes; the runner's count includes
    # them, as on the OpenAI wires.
    cache_read = raw.get("cache_read_input_tokens", 0)
    cache_write = raw.get("cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=raw.get("input_tokens", 0) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
        output_tokens=raw.get("output_tokens", 0),
    )
