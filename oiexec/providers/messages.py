"""The Anthropic Messages wire: `POST {base_url}/messages` streamed over SSE.

Auth: a key from the provider's `env_key` goes in `x-api-key` (what api.anthropic.com
wants); a key given as `experimental_bearer_token` goes in `Authorization: Bearer` instead
(what Anthropic-compatible gateways and Claude Code's `ANTHROPIC_AUTH_TOKEN` use).
`anthropic-version: 2023-06-01` is sent unless the provider's `http_headers` set it.

History mapping: consecutive same-role blocks are merged into one message; tool results go
back as `tool_result` blocks in a user message, in call order. Thinking blocks are kept in
`Reasoning` items (`content` = thinking text, `encrypted_content` = signature; a redacted
block has only `encrypted_content` = its data) and sent back unmodified for the current
tool-use cycle, i.e. every assistant turn after the last user-typed message. Prompt-cache
breakpoints go on the last system block, the last tool and the last user message.

Freeform (custom) tools are offered as a tool with one string property, `input`.
This module builds the request; `providers.events.messages` reads the answer's events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from oiexec.config.settings import ProviderConfig
from oiexec.core.protocols import RetryCallback
from oiexec.core.redact import register_secret
from oiexec.core.types import (
    HistoryItem,
    ImageInput,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from oiexec.providers.custom_tools import CUSTOM_INPUT_PARAM, as_function
from oiexec.providers.events.messages import parse_stream
from oiexec.providers.http import ProviderHttp, RetryTiming, WaitObserver

__all__ = [
    "ANTHROPIC_VERSION",
    "CUSTOM_INPUT_PARAM",
    "DEFAULT_MAX_TOKENS",
    "THINKING_BUDGETS",
    "MessagesClient",
    "auth_headers",
    "build_body",
    "parse_stream",
]

ANTHROPIC_VERSION = "2023-06-01"
#: Claude Code's default output budget for current models.
DEFAULT_MAX_TOKENS = 32_000
#: `thinking.budget_tokens` per `model_reasoning_effort`; the API minimum is 1024 and the
#: budget must stay below `max_tokens`, so the top efforts are capped at request time.
THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1_024,
    "low": 4_096,
    "medium": 10_000,
    "high": 24_000,
    "xhigh": 31_999,
    "max": 31_999,
    "ultra": 31_999,
    "persistent": 31_999,
}
_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def auth_headers(
    provider: ProviderConfig, api_key: str | None, extra_headers: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Headers that authenticate a Messages request (see the module docstring for the rule)."""
    headers: dict[str, str] = {}
    configured = {name.lower() for name in provider.http_headers}
    if "anthropic-version" not in configured:
        headers["anthropic-version"] = ANTHROPIC_VERSION
    if api_key:
        if provider.experimental_bearer_token and api_key == provider.experimental_bearer_token:
            headers["authorization"] = f"Bearer {api_key}"
        else:
            headers["x-api-key"] = api_key
    headers.update(extra_headers or {})
    return headers


class MessagesClient:
    """`ModelClient` for providers with `wire_api = "messages"`."""

    def __init__(
        self,
        provider: ProviderConfig,
        api_key: str | None,
        *,
        provider_id: str = "anthropic",
        extra_headers: Mapping[str, str] | None = None,
        timing: RetryTiming | None = None,
        transport: httpx.BaseTransport | None = None,
        wait_observer: WaitObserver | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        # The key travels in our own headers, so the shared client must not add a Bearer
        # header of its own; registering it keeps it out of every message all the same.
        register_secret(api_key)
        self._max_tokens = max_tokens
        self._http = ProviderHttp(
            provider_id,
            provider,
            None,
            extra_headers=auth_headers(provider, api_key, extra_headers),
            timing=timing,
            transport=transport,
            wait_observer=wait_observer,
        )

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        custom = frozenset(spec.name for spec in request.tools if spec.type == "custom")
        return self._http.stream(
            "messages",
            build_body(request, max_tokens=self._max_tokens),
            lambda events: parse_stream(events, custom_tools=custom),
            on_retry,
        )

    def close(self) -> None:
        self._http.close()


# ---------------------------------------------------------------------------------------------
# Request


def build_body(request: ModelRequest, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """The request body, with cache breakpoints on system, the last tool and last user turn."""
    system_texts = [request.instructions] if request.instructions else []
    history = list(request.history)
    # Leading system/developer items join the system prompt: the wire has no such role.
    while history:
        first = history[0]
        if not (isinstance(first, Message) and first.role in _SYSTEM_ROLES):
            break
        system_texts.append(first.text)
        history.pop(0)
    if request.output_schema is not None:
        system_texts.append(
            "Answer with a single JSON value that matches this JSON Schema, and nothing else:\n"
            + json.dumps(request.output_schema)
        )
    sampling = request.sampling
    if sampling.max_output_tokens is not None:
        max_tokens = sampling.max_output_tokens
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "stream": True}
    system: list[dict[str, Any]] = [{"type": "text", "text": t} for t in system_texts if t]
    if system:
        system[-1]["cache_control"] = dict(_EPHEMERAL)
        body["system"] = system
    body["messages"] = _messages(history)
    if request.tools:
        tools = [_tool(spec) for spec in request.tools]
        tools[-1]["cache_control"] = dict(_EPHEMERAL)
        body["tools"] = tools
        choice: dict[str, Any] = {"type": "auto"}
        if not request.parallel_tool_calls:
            choice["disable_parallel_tool_use"] = True
        body["tool_choice"] = choice
    thinking = sampling.thinking
    budget = THINKING_BUDGETS.get(request.reasoning_effort or "")
    if thinking is not None and not thinking.enabled:
        body["thinking"] = {"type": "disabled"}
    elif thinking is not None:
        chosen = thinking.budget_tokens if thinking.budget_tokens is not None else budget
        body["thinking"] = {
            "type": "enabled",
            "budget_tokens": min(chosen or max_tokens - 1, max_tokens - 1),
        }
    elif budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_tokens - 1)}
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    if sampling.effort is not None:
        body["output_config"] = {"effort": sampling.effort}
    body.update(sampling.extra_body)
    return body


_SYSTEM_ROLES = frozenset({"system", "developer"})


def _messages(history: list[HistoryItem]) -> list[dict[str, Any]]:
    cycle_start = _current_cycle_start(history)
    turns: list[tuple[str, list[dict[str, Any]]]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1][0] == role:
            turns[-1][1].append(block)
        else:
            turns.append((role, [block]))

    for index, item in enumerate(history):
        if isinstance(item, Reasoning):
            block = _thinking_block(item)
            if block is not None and index >= cycle_start:
                add("assistant", block)
        elif isinstance(item, ToolCall):
            add("assistant", _tool_use_block(item))
        elif isinstance(item, ToolOutput):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": item.call_id,
                "content": _result_content(item),
            }
            if item.is_error:
                result["is_error"] = True
            add("user", result)
        elif item.role == "assistant":
            if item.text:
                add("assistant", {"type": "text", "text": item.text})
        else:
            for block in _user_blocks(item):
                add("user", block)
    ordered = [(role, _tool_results_first(blocks)) for role, blocks in turns]
    for role, blocks in reversed(ordered):
        if role == "user":
            blocks[-1]["cache_control"] = dict(_EPHEMERAL)
            break
    return [{"role": role, "content": blocks} for role, blocks in ordered]


def _current_cycle_start(history: list[HistoryItem]) -> int:
    """Index after the last user-typed message: thinking before it belongs to past cycles."""
    for index in range(len(history) - 1, -1, -1):
        item = history[index]
        if isinstance(item, Message) and item.role == "user":
            return index + 1
    return 0


def _thinking_block(item: Reasoning) -> dict[str, Any] | None:
    if item.encrypted_content is None:
        return None  # unsigned reasoning (another wire's) cannot be sent back here
    if item.content is None:
        return {"type": "redacted_thinking", "data": item.encrypted_content}
    return {"type": "thinking", "thinking": item.content, "signature": item.encrypted_content}


def _tool_use_block(call: ToolCall) -> dict[str, Any]:
    tool_input: Any
    if call.call_type == "custom":
        tool_input = {CUSTOM_INPUT_PARAM: call.arguments}
    else:
        try:
            tool_input = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            tool_input = {}
        if not isinstance(tool_input, dict):
            tool_input = {}
    return {"type": "tool_use", "id": call.call_id, "name": call.name, "input": tool_input}


def _result_content(item: ToolOutput) -> str | list[dict[str, Any]]:
    """A tool's text, or with images the content blocks a `tool_result` carries: the text,
    then each image as a base64 source (how Claude Code returns images from MCP tools)."""
    if not item.images:
        return item.output
    blocks: list[dict[str, Any]] = []
    if item.output:
        blocks.append({"type": "text", "text": item.output})
    blocks.extend(_image_block(image) for image in item.images)
    return blocks


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = [_image_block(image) for image in message.images]
    if message.text or not blocks:
        # A developer/system message in mid-conversation can only travel as user text.
        blocks.append({"type": "text", "text": message.text or "(empty)"})
    return blocks


def _image_block(image: ImageInput) -> dict[str, Any]:
    header, _, data = image.data_url.partition(",")
    if header.startswith("data:") and header.endswith(";base64"):
        media_type = header[len("data:") : -len(";base64")]
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": image.data_url}}


def _tool_results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API rejects a user message whose tool_result blocks follow other content."""
    results = [b for b in blocks if b["type"] == "tool_result"]
    return results + [b for b in blocks if b["type"] != "tool_result"]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    description, schema = as_function(spec)
    return {"name": spec.name, "description": description, "input_schema": schema}
