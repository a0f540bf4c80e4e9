"""The OpenAI Responses wire's SSE events, read into typed models, and the parser that turns
them into a complete `ModelResponse`.

Only what the runner uses is read: `response.created` (the id), `response.output_item.done`
(each finished item), `response.completed` (usage, and the output for servers that send it
only there), and the failure events. Every other event type (the deltas, new ones the API
adds) is skipped, as Codex skips it. An item of a type the runner does not keep (hosted tool
calls: `web_search_call`, …) is skipped too; an item of a type it keeps must have the fields
it reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from httpx_sse import ServerSentEvent
from pydantic import AliasChoices, Field

from oiexec.core.errors import ProviderError
from oiexec.core.events import Usage
from oiexec.core.types import HistoryItem, Message, ModelResponse, Reasoning, ToolCall
from oiexec.providers.events.base import ErrorBody, Text, WireModel, read, stream_failure
from oiexec.providers.http import StreamInterrupted, json_event

__all__ = ["parse_stream"]


class _Typed(WireModel):
    """Any item or part: all the runner needs to know to pick its model."""

    type: str


class _Part(WireModel):
    type: str
    text: str | None = None
    refusal: str | None = None


class _MessageItem(WireModel):
    content: list[_Part] | None = None

    def item(self) -> Message:
        text = "".join(
            part.text or part.refusal or ""
            for part in self.content or []
            if part.type in ("output_text", "refusal")
        )
        return Message(role="assistant", text=text)


# Compatible servers that send only `id` have been seen; the call's id is whichever is set.
_CALL_ID = Field(validation_alias=AliasChoices("call_id", "id"))


class _FunctionCallItem(WireModel):
    call_id: str = _CALL_ID
    name: str
    arguments: str = ""  # a call without arguments takes none; the tool says if it needs some

    def item(self) -> ToolCall:
        return ToolCall(call_id=self.call_id, name=self.name, arguments=self.arguments)


class _CustomToolCallItem(WireModel):
    call_id: str = _CALL_ID
    name: str
    input: str = ""

    def item(self) -> ToolCall:
        return ToolCall(
            call_id=self.call_id, name=self.name, arguments=self.input, call_type="custom"
        )


class _TextPart(WireModel):
    text: str | None = None


class _ReasoningItem(WireModel):
    id: str | None = None
    summary: list[_TextPart] | None = None
    content: list[_TextPart] | None = None
    encrypted_content: str | None = None

    def item(self) -> Reasoning:
        return Reasoning(
            summary=tuple(part.text or "" for part in self.summary or []),
            encrypted_content=self.encrypted_content,
            content=(
                "".join(p.text or "" for p in self.content) if self.content is not None else None
            ),
            item_id=self.id,
        )


_ITEMS: dict[str, type[_MessageItem | _FunctionCallItem | _CustomToolCallItem | _ReasoningItem]] = {
    "message": _MessageItem,
    "function_call": _FunctionCallItem,
    "custom_tool_call": _CustomToolCallItem,
    "reasoning": _ReasoningItem,
}


def _history_item(raw: Any, *, event: str, root: str) -> HistoryItem | None:
    """An output item as history, None for the types the runner does not keep."""
    kind = read(_Typed, raw, event=event, root=root).type
    model = _ITEMS.get(kind)
    if model is None:
        return None  # hosted-tool items (web_search_call, …) are not part of the history
    return read(model, raw, event=event, root=root).item()


class _Counted(WireModel):
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


class _Usage(WireModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _Counted | None = None
    output_tokens_details: _Counted | None = None

    def usage(self) -> Usage:
        inputs = self.input_tokens_details or _Counted()
        outputs = self.output_tokens_details or _Counted()
        return Usage(
            input_tokens=max(0, self.input_tokens or 0),
            cached_input_tokens=max(0, inputs.cached_tokens or 0),
            output_tokens=max(0, self.output_tokens or 0),
            reasoning_output_tokens=max(0, outputs.reasoning_tokens or 0),
        )


class _IncompleteDetails(WireModel):
    reason: Text = None


class _Response(WireModel):
    id: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    output: list[Any] | None = None
    error: ErrorBody | None = None
    incomplete_details: _IncompleteDetails | None = None


class _ResponseEvent(WireModel):
    """`response.created`, `.completed`, `.failed`, `.incomplete`: the response so far."""

    response: _Response | None = None


class _ItemDone(WireModel):
    item: Any  # required; its own shape is read by `_history_item`


class _ErrorEvent(WireModel):
    """An `error` event: the error's fields at the top level (its `type` is the event's), or
    nested in `error`."""

    code: Text = None
    message: Text = None
    error: ErrorBody | None = None


def parse_stream(events: Iterator[ServerSentEvent]) -> ModelResponse:
    """Collect a complete response from Responses SSE events.

    Raises `StreamInterrupted` if the events end before `response.completed`, or an event
    the runner needs has the wrong shape, or the response failed with a transient error
    (retried); `ProviderError` for a failure that a retry cannot fix and `response.incomplete`.
    """
    items: list[HistoryItem] = []
    response_id: str | None = None
    for event in events:
        if not event.data or event.data == "[DONE]":
            continue
        data = json_event(event.data)
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if not isinstance(kind, str) or not kind:
            kind = event.event
        if kind == "response.created":
            created = read(_ResponseEvent, data, event=kind).response
            response_id = (created.id if created else None) or response_id
        elif kind == "response.output_item.done":
            raw = read(_ItemDone, data, event=kind).item
            item = _history_item(raw, event=kind, root="item")
            if item is not None:
                items.append(item)
        elif kind == "response.completed":
            return _completed(read(_ResponseEvent, data, event=kind), items, response_id)
        elif kind == "response.failed":
            failed = read(_ResponseEvent, data, event=kind).response
            raise _failure(kind, failed.error if failed else None)
        elif kind == "error":
            error = read(_ErrorEvent, data, event=kind)
            raise _failure(kind, error.error or ErrorBody(code=error.code, message=error.message))
        elif kind == "response.incomplete":
            incomplete = read(_ResponseEvent, data, event=kind).response
            details = incomplete.incomplete_details if incomplete else None
            reason = (details.reason if details else None) or "unknown"
            raise ProviderError(f"Incomplete response returned, reason: {reason}")
    raise StreamInterrupted("stream closed before response.completed")


def _completed(
    event: _ResponseEvent, items: list[HistoryItem], response_id: str | None
) -> ModelResponse:
    response = event.response or _Response()
    if not items:
        # Some servers send the output only in the final event.
        for index, raw in enumerate(response.output or []):
            root = f"response.output[{index}]"
            item = _history_item(raw, event="response.completed", root=root)
            if item is not None:
                items.append(item)
    return ModelResponse(
        items=tuple(items),
        usage=response.usage.usage() if response.usage else Usage(),
        response_id=response.id or response_id,
        finish_reason=response.status or "completed",
    )


def _failure(kind: str, error: ErrorBody | None) -> Exception:
    """`response.failed` or `error`: retried or final as `answers.stream_error_verdict`
    judges its code, as Codex judges it."""
    error = error or ErrorBody()
    message = error.message or f"{kind} without an error message"
    return stream_failure(error.code or error.type, message, shown=message)
