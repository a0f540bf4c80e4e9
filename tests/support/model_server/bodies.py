"""Readers of the request bodies a client sent the model server, whichever wire it speaks
(Responses, Chat Completions, Anthropic Messages), so a test can assert what the model saw."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


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
