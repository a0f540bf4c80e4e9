"""A manifest's `[history]` rules for the calls and reasoning in a request's history.

Pure functions of the history and the rules, so every request is shaped the same way from
the stored conversation (a resumed session gets exactly what the live one sent):

- tool calls: arguments compacted to one-line JSON, id characters a provider rejects
  rewritten (kimi's `:`), calls that never got an output dropped;
- reasoning: kept, dropped, or a placeholder put where a provider insists every assistant
  turn (or every turn with tool calls) opens with reasoning.
"""

from __future__ import annotations

import json

from oiexec.core.types import HistoryItem, Message, Reasoning, ToolCall, ToolOutput
from oiexec.harness.spec import HistorySpec

__all__ = ["assistant_side", "shape_calls", "shape_reasoning"]


def assistant_side(item: HistoryItem) -> bool:
    """What the model produced: its reasoning, its tool calls, its messages."""
    return isinstance(item, Reasoning | ToolCall) or (
        isinstance(item, Message) and item.role == "assistant"
    )


def shape_calls(history: list[HistoryItem], rules: HistorySpec) -> list[HistoryItem]:
    shaping = rules.compact_tool_arguments or rules.tool_call_id_rewrite
    if not shaping and not rules.drop_unanswered_calls:
        return history
    answered = {i.call_id for i in history if isinstance(i, ToolOutput)}
    out: list[HistoryItem] = []
    for item in history:
        if isinstance(item, ToolCall):
            if rules.drop_unanswered_calls and item.call_id not in answered:
                continue
            update: dict[str, str] = {"call_id": _rewrite_id(item.call_id, rules)}
            if rules.compact_tool_arguments and item.call_type == "function":
                update["arguments"] = _compact(item.arguments)
            out.append(item.model_copy(update=update))
        elif isinstance(item, ToolOutput):
            out.append(item.model_copy(update={"call_id": _rewrite_id(item.call_id, rules)}))
        else:
            out.append(item)
    return out


def shape_reasoning(history: list[HistoryItem], rules: HistorySpec) -> list[HistoryItem]:
    policy = rules.reasoning_policy
    if policy == "keep":
        return history
    if policy == "none":
        return [item for item in history if not isinstance(item, Reasoning)]
    out: list[HistoryItem] = []
    turn: list[HistoryItem] = []

    def flush() -> None:
        if not turn:
            return
        has = any(isinstance(i, Reasoning) and i.content for i in turn)
        calls = any(isinstance(i, ToolCall) for i in turn)
        if not has and (policy == "every_assistant" or calls):
            rest = [i for i in turn if not isinstance(i, Reasoning)]
            out.append(Reasoning(content=rules.reasoning_placeholder))
            out.extend(rest)
        else:
            out.extend(turn)
        turn.clear()

    for item in history:
        if assistant_side(item):
            turn.append(item)
        else:
            flush()
            out.append(item)
    flush()
    return out


def _rewrite_id(call_id: str, rules: HistorySpec) -> str:
    for char in rules.tool_call_id_rewrite:
        call_id = call_id.replace(char, "_")
    return call_id


def _compact(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
