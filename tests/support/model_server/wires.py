"""A scripted `Reply` (or `Failed`) as the SSE events each wire streams, shaped like the
real APIs: OpenAI Responses, OpenAI Chat Completions and Anthropic Messages."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from tests.support.model_server.steps import Failed, FunctionCall, Reply, TokenUsage

Wire = Literal["responses", "chat", "messages"]


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


def failed_events(step: Failed, wire: Wire, *, model: str, ids: Callable[[], int]) -> list[Any]:
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


def encode_event(event: Mapping[str, Any] | str, wire: Wire) -> bytes:
    if isinstance(event, str):
        return f"data: {event}\n\n".encode()
    data = json.dumps(event, separators=(",", ":"))
    if wire in ("responses", "messages") and "type" in event:
        return f"event: {event['type']}\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()


def keepalive_bytes(kind: str, wire: Wire, number: int) -> bytes:
    """One keepalive as `kind` (see `Keepalive`) on `wire`: bytes that say nothing."""
    if kind == "blank":
        return b"\n"
    if kind == "event" and wire == "messages":
        return b'event: ping\ndata: {"type": "ping"}\n\n'
    if kind == "event" and wire == "responses":
        data = json.dumps({"type": "keepalive", "sequence_number": number})
        return f"event: keepalive\ndata: {data}\n\n".encode()
    if kind == "event":
        return b": OPENROUTER PROCESSING\n\n"
    return b": ping\n\n"
