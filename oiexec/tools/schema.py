"""Checking a call's arguments against its tool's JSON Schema.

Tool schemas are shipped data (`harnesses/*/tools.json`) written in a small part of JSON
Schema; this checks exactly that part, with jsonschema's wording of each failure, and refuses
a schema that uses anything else when the tool is built, so a schema never goes half-checked.
It exists because importing jsonschema costs about 150 ms, which every run would pay on its
first tool call (the user's `--output-schema`, which can be anything, still uses jsonschema).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["ArgumentSchema", "SchemaError"]

#: Keywords that only document or annotate.
_ANNOTATIONS = frozenset({"description", "title", "default", "$schema", "examples"})
_CHECKED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "minLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
    }
)

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}

Problem = tuple[tuple[str | int, ...], str]


class SchemaError(ValueError):
    """A tool schema uses JSON Schema beyond what `ArgumentSchema` checks."""


class ArgumentSchema:
    """One tool's parameters schema, checked against the subset it may use."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        _check_supported(schema, ())
        self._schema = schema

    def problems(self, instance: Any) -> list[str]:
        """Every failure as `path: message` (path left out at the top), sorted by path."""
        found = sorted(_validate(self._schema, instance, ()), key=lambda p: [str(x) for x in p[0]])
        return [f"{'.'.join(map(str, path))}: {msg}" if path else msg for path, msg in found]


def _check_supported(schema: Mapping[str, Any], where: tuple[str, ...]) -> None:
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        place = "/".join(where) or "(top)"
        raise SchemaError(f"unsupported JSON Schema keyword(s) at {place}: {sorted(unknown)}")
    for name, sub in (schema.get("properties") or {}).items():
        _check_supported(sub, (*where, name))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            _check_supported(schema[key], (*where, key))
    for index, sub in enumerate(schema.get("anyOf") or ()):
        _check_supported(sub, (*where, f"anyOf[{index}]"))


def _validate(
    schema: Mapping[str, Any], value: Any, path: tuple[str | int, ...]
) -> Iterator[Problem]:
    # Keywords in the schema's own order, as jsonschema reports them.
    for keyword, expected in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is not None:
            yield from check(schema, expected, value, path)


def _type(_s: Any, expected: Any, value: Any, path: Any) -> Iterator[Problem]:
    names = [expected] if isinstance(expected, str) else list(expected)
    if not any(_TYPES[name](value) for name in names):
        yield path, f"{value!r} is not of type {', '.join(repr(n) for n in names)}"


def _properties(_s: Any, props: Mapping[str, Any], value: Any, path: Any) -> Iterator[Problem]:
    if isinstance(value, dict):
        for name, sub in props.items():
            if name in value:
                yield from _validate(sub, value[name], (*path, name))


def _required(_s: Any, names: Sequence[str], value: Any, path: Any) -> Iterator[Problem]:
    if isinstance(value, dict):
        for name in names:
            if name not in value:
                yield path, f"{name!r} is a required property"


def _additional(schema: Any, allowed: Any, value: Any, path: Any) -> Iterator[Problem]:
    if not isinstance(value, dict):
        return
    extras = sorted((k for k in value if k not in (schema.get("properties") or {})), key=str)
    if allowed is False and extras:
        verb = "was" if len(extras) == 1 else "were"
        listed = ", ".join(repr(k) for k in extras)
        yield path, f"Additional properties are not allowed ({listed} {verb} unexpected)"
    elif isinstance(allowed, Mapping):
        for key in extras:
            yield from _validate(allowed, value[key], (*path, key))


def _items(_s: Any, sub: Any, value: Any, path: Any) -> Iterator[Problem]:
    if isinstance(value, list) and isinstance(sub, Mapping):
        for index, item in enumerate(value):
            yield from _validate(sub, item, (*path, index))


def _enum(_s: Any, options: list[Any], value: Any, path: Any) -> Iterator[Problem]:
    if not any(_equal(value, option) for option in options):
        yield path, f"{value!r} is not one of {options!r}"


def _const(_s: Any, const: Any, value: Any, path: Any) -> Iterator[Problem]:
    if not _equal(value, const):
        yield path, f"{const!r} was expected"


def _any_of(_s: Any, options: list[Any], value: Any, path: Any) -> Iterator[Problem]:
    if not any(not list(_validate(option, value, path)) for option in options):
        yield path, f"{value!r} is not valid under any of the given schemas"


def _min_length(_s: Any, least: int, value: Any, path: Any) -> Iterator[Problem]:
    if isinstance(value, str) and len(value) < least:
        yield path, f"{value!r} should be non-empty" if least == 1 else f"{value!r} is too short"


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _minimum(_s: Any, least: float, value: Any, path: Any) -> Iterator[Problem]:
    if _numeric(value) and value < least:
        yield path, f"{value!r} is less than the minimum of {least!r}"


def _maximum(_s: Any, most: float, value: Any, path: Any) -> Iterator[Problem]:
    if _numeric(value) and value > most:
        yield path, f"{value!r} is greater than the maximum of {most!r}"


def _exclusive_minimum(_s: Any, least: float, value: Any, path: Any) -> Iterator[Problem]:
    if _numeric(value) and value <= least:
        yield path, f"{value!r} is less than or equal to the minimum of {least!r}"


def _equal(one: Any, other: Any) -> bool:
    # JSON has no booleans among its numbers: `true` is not `1`.
    if isinstance(one, bool) != isinstance(other, bool):
        return False
    return bool(one == other)


_KEYWORDS: dict[str, Any] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "enum": _enum,
    "const": _const,
    "anyOf": _any_of,
    "minLength": _min_length,
    "minimum": _minimum,
    "maximum": _maximum,
    "exclusiveMinimum": _exclusive_minimum,
}
