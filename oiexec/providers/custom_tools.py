"""Freeform (custom) tools on wires that only know JSON-schema functions.

Codex's `apply_patch` is a custom tool whose raw text is constrained by a grammar on the
Responses wire. Chat Completions and Anthropic Messages have no such tools, so the tool is
offered as a function taking one string, the grammar goes into the description for the model
to read, and the raw text is unwrapped again from the call.
"""

from __future__ import annotations

import json
from typing import Any

from oiexec.core.types import ToolSpec

#: The single parameter a custom tool gets when offered as a function.
CUSTOM_INPUT_PARAM = "input"


def as_function(spec: ToolSpec) -> tuple[str, dict[str, Any]]:
    """The description and JSON schema to offer `spec` with; function tools pass through."""
    if spec.type != "custom":
        return spec.description, spec.parameters or {"type": "object", "properties": {}}
    description = spec.description
    definition = (spec.format or {}).get("definition")
    if definition:
        description = (
            f"{description}\n\nPass the raw text in `{CUSTOM_INPUT_PARAM}`; it must match "
            f"this grammar:\n{definition}"
        )
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            CUSTOM_INPUT_PARAM: {"type": "string", "description": "The raw tool input."}
        },
        "required": [CUSTOM_INPUT_PARAM],
        "additionalProperties": False,
    }
    return description, schema


def unwrap_input(arguments: str) -> str:
    """The raw text of a custom call; models sometimes skip the JSON wrapper."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(parsed, dict) and isinstance(parsed.get(CUSTOM_INPUT_PARAM), str):
        return str(parsed[CUSTOM_INPUT_PARAM])
    return arguments
