"""The OpenAI Responses wire: `POST {base_url}/responses` streamed over SSE."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from httpx_sse import ServerSentEvent

from oiexec.core.errors import ProviderError
from oiexec.core.events import Usage
from oiexec.core.protocols import RetryCallback
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.answers import context_overflow, is_context_overflow
from oiexec.providers.http import (
    STREAM_DISCONNECTED,
    StreamInterrupted,
    WireClient,
    json_event,
)

__all__ = ["OUTPUT_SCHEMA_NAME", "ResponsesClient", "build_body", "parse_stream"]

#: The name Codex gives `--output-schema` in `text.format`.
OUTPUT_SCHEMA_NAME = "codex_output_schema"


class ResponsesClient(WireClient):
    """`ModelClient` for providers with `wire_api = "responses"`."""

    default_provider_id = "openai"

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        return self._http.stream("responses", build_body(request), parse_stream, on_retry)


def build_body(request: ModelRequest) -> dict[str, Any]:
    """The request body. Instructions travel as the first `developer` message, as Codex
    sends them, never in `instructions`."""
    items: list[dict[str, Any]] = []
    if request.instructions:
        items.append(_message_item(Message(role="developer", text=request.instructions)))
    items.extend(_input_item(item) for item in request.history)
    body: dict[str, Any] = {
        "model": request.model,
        "stream": True,
        "input": [item for item in items if item],
        "tools": [*(_tool(spec) for spec in request.tools), *request.hosted_tools],
        "tool_choice": "auto",
        "parallel_tool_calls": request.parallel_tool_calls,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    reasoning: dict[str, str] = {}
    if request.reasoning_effort:
        reasoning["effort"] = request.reasoning_effort
    if request.reasoning_summary and request.reasoning_summary != "none":
        reasoning["summary"] = request.reasoning_summary
    if reasoning:
        body["reasoning"] = reasoning
    if request.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    if request.output_schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "strict": True,
                "schema": request.output_schema,
                "name": OUTPUT_SCHEMA_NAME,
            }
        }
    sampling = request.sampling
    if sampling.max_output_tokens is not None:
        body["max_output_tokens"] = sampling.max_output_tokens
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    body.update(sampling.extra_body)
    return body


def _message_item(message: Message) -> dict[str, Any]:
    part_type = "output_text" if message.role == "assistant" else "input_text"
    content: list[dict[str, Any]] = [
        {"type": "input_image", "image_url": image.data_url} for image in message.images
    ]
    content.append({"type": part_type, "text": message.text})
    return {"type": "message", "role": message.role, "content": content}


def _input_item(item: HistoryItem) -> dict[str, Any]:
    if isinstance(item, Message):
        return _message_item(item)
    if isinstance(item, Reasoning):
        if item.encrypted_content is None and not item.summary and item.content is None:
            return {}
        # No `id`: with `store: false` the server cannot look items up by id and rejects them.
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text} for text in item.summary],
        }
        if item.content is not None:
            reasoning["content"] = [{"type": "reasoning_text", "text": item.content}]
        if item.encrypted_content is not None:
            reasoning["encrypted_content"] = item.encrypted_content
        return reasoning
    if isinstance(item, ToolCall):
        if item.call_type == "custom":
            return {
                "type": "custom_tool_call",
                "call_id": item.call_id,
                "name": item.name,
                "input": item.arguments,
            }
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
        }
    output_type = (
        "custom_tool_call_output" if item.call_type == "custom" else "function_call_output"
    )
    return {"type": output_type, "call_id": item.call_id, "output": _output(item)}


def _output(item: ToolOutput) -> str | list[dict[str, Any]]:
    """A tool's text, or with images (an MCP tool's image blocks) the array of content parts
    the Responses API takes in an output: the text, then each image."""
    if not item.images:
        return item.output
    # An image-only result (a screenshot tool) has no text part: Codex sends none either.
    parts: list[dict[str, Any]] = (
        [{"type": "input_text", "text": item.output}] if item.output else []
    )
    parts.extend({"type": "input_image", "image_url": image.data_url} for image in item.images)
    return parts


def _tool(spec: ToolSpec) -> dict[str, Any]:
    if spec.type == "custom":
        tool: dict[str, Any] = {
            "type": "custom",
            "name": spec.name,
            "description": spec.description,
        }
        if spec.format is not None:
            tool["format"] = spec.format
        return tool
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "strict": False,
        "parameters": spec.parameters or {"type": "object", "properties": {}},
    }


def parse_stream(events: Iterator[ServerSentEvent]) -> ModelResponse:
    """Collect a complete response from Responses SSE events.

    Raises `StreamInterrupted` if the events end before `response.completed`, and
    `ProviderError` for `response.failed`, `response.incomplete` and `error` events.
    """
    items: list[HistoryItem] = []
    response_id: str | None = None
    for event in events:
        if not event.data or event.data == "[DONE]":
            continue
        data = json_event(event.data)
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event.event
        if kind == "response.created":
            response_id = (data.get("response") or {}).get("id") or response_id
        elif kind == "response.output_item.done":
            item = _output_item(data.get("item") or {})
            if item is not None:
                items.append(item)
        elif kind == "response.completed":
            response = data.get("response") or {}
            if not items:
                # Some servers send the output only in the final event.
                items = [i for raw in response.get("output") or [] if (i := _output_item(raw))]
            return ModelResponse(
                items=tuple(items),
                usage=_usage(response.get("usage")),
                response_id=response.get("id") or response_id,
                finish_reason=response.get("status") or "completed",
            )
        elif kind in ("response.failed", "response.incomplete", "error"):
            raise _stream_error(kind, data)
    raise StreamInterrupted("stream closed before response.completed")


def _stream_error(kind: str, data: dict[str, Any]) -> ProviderError:
    response = data.get("response") or {}
    if kind == "response.incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
        return ProviderError(f"Incomplete response returned, reason: {reason}")
    nested = response.get("error") if kind == "response.failed" else data.get("error")
    error: dict[str, Any] = nested if isinstance(nested, dict) else data
    message = error.get("message") or f"{kind} without an error message"
    code = error.get("code")
    if is_context_overflow(None, str(code) if code else None, str(message)):
        return context_overflow(f"the model refused the request: {message}")
    return ProviderError(f"{STREAM_DISCONNECTED}: {message}")


def _output_item(raw: dict[str, Any]) -> HistoryItem | None:
    kind = raw.get("type")
    if kind == "message":
        parts = raw.get("content") or []
        text = "".join(
            str(part.get("text") or part.get("refusal") or "")
            for part in parts
            if part.get("type") in ("output_text", "refusal")
        )
        return Message(role="assistant", text=text)
    if kind == "function_call":
        return ToolCall(
            call_id=str(raw.get("call_id") or raw.get("id") or ""),
            name=str(raw.get("name") or ""),
            arguments=str(raw.get("arguments") or ""),
        )
    if kind == "custom_tool_call":
        return ToolCall(
            call_id=str(raw.get("call_id") or raw.get("id") or ""),
            name=str(raw.get("name") or ""),
            arguments=str(raw.get("input") or ""),
            call_type="custom",
        )
    if kind == "reasoning":
        summary = tuple(str(part.get("text") or "") for part in raw.get("summary") or [])
        content_parts = [str(part.get("text") or "") for part in raw.get("content") or []]
        return Reasoning(
            summary=summary,
            encrypted_content=raw.get("encrypted_content"),
            content="".join(content_parts) if content_parts else None,
            item_id=raw.get("id"),
        )
    # Hosted-tool items (web_search_call, ...) are not part of the history we keep.
    return None


def _usage(raw: dict[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    input_details = raw.get("input_tokens_details") or {}
    output_details = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        cached_input_tokens=int(input_details.get("cached_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        reasoning_output_tokens=int(output_details.get("reasoning_tokens") or 0),
    )
