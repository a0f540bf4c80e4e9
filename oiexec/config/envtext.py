"""Reading an environment variable's text as the value its config key wants, strictly.

A file or `-c` value is TOML and carries its own type; an environment variable is always text.
So where the key wants a boolean or a number, the text must spell one exactly: `true` or
`false` (any case), a decimal integer, a decimal number. Anything else (`yes`, `1` for a
boolean, `100MB`) is left as the text it is, and strict validation then reports it with the
variable's name, the key, the expected type and the value, as it would for a file. Tables and
lists given whole as JSON keep JSON's own types (a JSON `"true"` is a string).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["annotation_at", "read_env_text", "without_none"]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def annotation_at(model: type[BaseModel], path: tuple[str, ...]) -> Any:
    """The type the settings tree gives the key at `path`; None where no key is defined."""
    annotation: Any = model
    for part in path:
        annotation = without_none(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            info = annotation.model_fields.get(part)
            if info is None:
                return None
            annotation = info.annotation
        elif typing.get_origin(annotation) is dict and len(typing.get_args(annotation)) == 2:
            annotation = typing.get_args(annotation)[1]
        else:
            return None
    return annotation


def read_env_text(
    model: type[BaseModel], data: dict[str, Any], paths: Mapping[tuple[str, ...], str]
) -> dict[str, Any]:
    """`data` with each variable's own text (at its key path) read as its key's scalar type
    where it spells one; nothing else changes."""
    for path in paths:
        node: Any = data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or not isinstance(node.get(path[-1]), str):
            continue
        node[path[-1]] = _read(annotation_at(model, path), node[path[-1]])
    return data


def _read(annotation: Any, text: str) -> Any:
    wanted = without_none(annotation)
    word = text.strip()
    if wanted is bool and word.lower() in ("true", "false"):
        return word.lower() == "true"
    if wanted is int and _INT.fullmatch(word):
        return int(word)
    if wanted is float and _FLOAT.fullmatch(word):
        return float(word)
    return text


def without_none(annotation: Any) -> Any:
    """`X | None` -> X, and `Annotated[X, ...]` (a key with a range) -> X; any other
    annotation as it is."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation
