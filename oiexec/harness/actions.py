"""Text-action parsers: the one action of a reply of a model without function calling.

- `fenced_blocks`: mini-swe-agent text mode (exactly one ```mswea_bash_command block).
- `swe_action`: SWE-agent (an `<invoke name=...>` block, else a fenced block; the command
  line becomes a tool call when it names a tool, a `bash` call otherwise).
- `code_blocks`: classic Open Interpreter's Markdown fallback (```python ...).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["Action", "code_blocks", "fenced_blocks", "parse_command_line", "swe_action"]

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_INVOKE = re.compile(r"<invoke\s+name=\"([^\"]+)\"\s*>(.*?)</invoke>", re.DOTALL)
_PARAM = re.compile(r"<parameter\s+name=\"([^\"]+)\"\s*>(.*?)</parameter>", re.DOTALL)


@dataclass(frozen=True)
class Action:
    """A parsed action: the tool it names and its arguments."""

    tool: str
    arguments: dict[str, Any]


def fenced_blocks(text: str, language: str) -> list[str]:
    """Bodies of the fenced blocks tagged exactly `language`."""
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1).strip() == language]


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block with a language tag."""
    return [
        (m.group(1).strip(), m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1).strip() and m.group(2).strip()
    ]


def parse_command_line(line: str, tools: dict[str, list[str]]) -> Action:
    """A SWE-agent command line: `tool positional... --flag value` for a known tool (its
    positional parameter names in `tools`), otherwise a `bash` command."""
    stripped = line.strip()
    head = stripped.split(maxsplit=1)[0] if stripped else ""
    if head not in tools:
        return Action("bash", {"command": stripped})
    try:
        words = shlex.split(stripped)[1:]
    except ValueError:
        return Action("bash", {"command": stripped})
    positional = list(tools[head])
    args: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name = word[2:]
            values: list[str] = []
            i += 1
            while i < len(words) and not words[i].startswith("--"):
                values.append(words[i])
                i += 1
            args[name] = _coerce(name, values)
            continue
        if positional:
            args[positional.pop(0)] = word
        i += 1
    return Action(head, args)


def _coerce(name: str, values: list[str]) -> Any:
    if name == "view_range":
        return [int(v) for v in values]
    if name == "insert_line" and values:
        return int(values[0])
    return " ".join(values)


def swe_action(text: str, tools: dict[str, list[str]]) -> tuple[list[Action], str | None]:
    """The actions in a SWE-agent reply, or the reason none could be read."""
    invokes = _INVOKE.findall(text)
    if invokes:
        actions = []
        for name, body in invokes:
            params: dict[str, Any] = {k: _unescape(v) for k, v in _PARAM.findall(body)}
            if "insert_line" in params:
                params["insert_line"] = int(params["insert_line"])
            actions.append(Action(name, params))
        return actions, None
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if not blocks:
        return [], "no command block"
    # As SWE-agent's thought-action parser: the last block is the action.
    command = blocks[-1].strip("\n")
    if not command.strip():
        return [], "empty command block"
    return [parse_command_line(command, tools)], None


def _unescape(value: str) -> str:
    return value.strip("\n") if value.startswith("\n") else value
