"""The OpenAI Responses wire: `POST {base_url}/responses` streamed over SSE.

This module builds the request; `providers.events.responses` reads the answer's events."""

from __future__ import annotations

from typing import Any

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
from oiexec.providers.events.responses import parse_stream
from oiexec.providers.wire_client import WireClient

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
