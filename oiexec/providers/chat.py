"""The Chat Completions wire: `POST {base_url}/chat/completions` streamed over SSE.

Freeform (custom) tools do not exist on this wire, so each is offered as a function with one
string parameter, `input`, holding the raw text; calls to it are mapped back to custom calls.
This module builds the request; `providers.events.chat` reads the answer's chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oiexec.core.protocols import RetryCallback
from oiexec.core.types import (
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.custom_tools import CUSTOM_INPUT_PARAM, as_function
from oiexec.providers.events.chat import parse_stream
from oiexec.providers.responses import OUTPUT_SCHEMA_NAME
from oiexec.providers.wire_client import WireClient

__all__ = ["CUSTOM_INPUT_PARAM", "ChatClient", "build_body", "parse_stream"]


class ChatClient(WireClient):
    """`ModelClient` for providers with `wire_api = "chat"`."""

    default_provider_id = "chat"

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        custom = frozenset(spec.name for spec in request.tools if spec.type == "custom")
        return self._http.stream(
            "chat/completions",
            build_body(request),
            lambda events: parse_stream(events, custom_tools=custom),
            on_retry,
        )


def build_body(request: ModelRequest) -> dict[str, Any]:
    sampling = request.sampling
    body: dict[str, Any] = {"model": request.model, "stream": True}
    if sampling.include_usage is not False:
        body["stream_options"] = {"include_usage": True}
    body["messages"] = _messages(request)
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        body["tool_choice"] = "auto"
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.reasoning_effort:
        body["reasoning_effort"] = request.reasoning_effort
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": OUTPUT_SCHEMA_NAME,
                "strict": True,
                "schema": request.output_schema,
            },
        }
    _add_sampling(body, request)
    return body


def _add_sampling(body: dict[str, Any], request: ModelRequest) -> None:
    sampling = request.sampling
    if sampling.max_output_tokens is not None:
        body[sampling.max_tokens_field] = sampling.max_output_tokens
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    thinking = sampling.thinking
    if thinking is not None:
        # Kimi's and GLM's shape; other vendors' switches go through `extra_body`.
        shape: dict[str, Any] = {"type": "enabled" if thinking.enabled else "disabled"}
        if thinking.budget_tokens is not None:
            shape["budget_tokens"] = thinking.budget_tokens
        if thinking.keep is not None:
            shape["keep"] = thinking.keep
        body["thinking"] = shape
    if sampling.chat_prompt_cache_key and request.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    body.update(sampling.extra_body)


@dataclass
class _AssistantTurn:
    """Consecutive assistant-side history items, sent as one chat message."""

    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    has_reasoning: bool = False

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(self.texts)}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.has_reasoning:
            # DeepSeek and Kimi reject tool-call turns whose reasoning was dropped.
            message["reasoning_content"] = "".join(self.reasoning)
        return message

    def is_empty(self) -> bool:
        return not (self.texts or self.tool_calls or self.has_reasoning)


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    turn = _AssistantTurn()
    # Tool messages carry text only: images a tool returned follow the run of tool
    # messages as one user message (tool messages must directly follow their call).
    with_images: list[ToolOutput] = []

    def flush() -> None:
        nonlocal turn
        if not turn.is_empty():
            messages.append(turn.message())
        turn = _AssistantTurn()

    def flush_images() -> None:
        if with_images:
            messages.append(_images_message(with_images))
            with_images.clear()

    for item in request.history:
        if isinstance(item, Reasoning):
            flush_images()
            if item.content is not None:
                turn.reasoning.append(item.content)
                turn.has_reasoning = True
        elif isinstance(item, ToolCall):
            flush_images()
            turn.tool_calls.append(_tool_call(item))
        elif isinstance(item, Message) and item.role == "assistant":
            flush_images()
            turn.texts.append(item.text)
        else:
            flush()
            if not isinstance(item, ToolOutput):
                flush_images()
            elif item.images:
                with_images.append(item)
            messages.append(_non_assistant(item))
    flush()
    flush_images()
    return messages


def _images_message(outputs: list[ToolOutput]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for output in outputs:
        parts.append({"type": "text", "text": f"Images returned by tool call {output.call_id}:"})
        parts.extend(
            {"type": "image_url", "image_url": {"url": image.data_url}} for image in output.images
        )
    return {"role": "user", "content": parts}


def _non_assistant(item: Message | ToolOutput) -> dict[str, Any]:
    if isinstance(item, ToolOutput):
        return {"role": "tool", "tool_call_id": item.call_id, "content": item.output}
    # Few chat providers know the `developer` role; `system` means the same to all of them.
    role = "user" if item.role == "user" else "system"
    if not item.images:
        return {"role": role, "content": item.text}
    parts: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": image.data_url}} for image in item.images
    ]
    parts.append({"type": "text", "text": item.text})
    return {"role": role, "content": parts}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    arguments = (
        json.dumps({CUSTOM_INPUT_PARAM: call.arguments})
        if call.call_type == "custom"
        else call.arguments
    )
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _tool(spec: ToolSpec) -> dict[str, Any]:
    description, parameters = as_function(spec)
    return {
        "type": "function",
        "function": {"name": spec.name, "description": description, "parameters": parameters},
    }
