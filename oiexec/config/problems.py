"""Validating the merged config, and saying what is wrong in the user's terms.

Every problem names the key, where it was set (file and line, the environment variable, or
`-c`), what type the key wants and the value it got: `sandbox_workspace_write.network_access`
in ~/.openinterpreter/config.toml:3: expected a boolean (true or false), got the string "yes".

A value is checked wherever it is set, not only where it wins: `-c sandbox_mode=bogus -s
workspace-write`, or a config file's bad value that a profile or a flag overrides, is an
error too (`check_overridden`). A typo that happens to be overridden today takes effect the
day the override goes (a CI job drops its `-s`), and a reader of the file believes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from oiexec.config.layers import Layer, deep_merge, layer_of, leaf_paths
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError

__all__ = ["REPORTED", "check_overridden", "validate_settings"]

#: How many problems of one kind are named one by one; the rest are counted. A generated
#: config with 20 000 unknown keys gets a readable report, not 20 000 lines (or JSONL items).
REPORTED = 20

_EXPECTED = {
    "bool_type": "a boolean (true or false)",
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
}

#: Keys whose value is a secret: a problem with one never repeats the value.
_CREDENTIALS = frozenset({"experimental_bearer_token"})


def validate_settings(merged: dict[str, Any], layers: list[Layer]) -> Settings:
    """`merged` as `Settings`; a `ConfigError` listing every problem otherwise."""
    try:
        return Settings(**merged)
    except ValidationError as exc:
        found = [(_problem(error, merged, layers), error) for error in exc.errors()[:REPORTED]]
        raise _invalid(found, exc.error_count()) from None


def check_overridden(
    merged: dict[str, Any],
    layers: list[Layer],
    checked: Sequence[Layer],
    flag_names: Mapping[str, str],
) -> None:
    """A `ConfigError` for a value in one of the `checked` layers that a higher layer
    overrides and that would be invalid had it won. `merged` is the valid effective config:
    each layer's values are tried in place of the ones that won, so a value is judged in the
    context it would have (a provider table completed by other layers is no problem).
    `flag_names` spells a dedicated flag's key as the user typed it (`sandbox_mode`: `-s`)."""
    found: list[tuple[str, ErrorDetails]] = []
    count = 0
    for layer in checked:
        overridden = _overridden(layer, layers)
        if not overridden:
            continue
        trial = deep_merge(merged, layer.data)
        try:
            Settings.model_validate(trial)
            continue
        except ValidationError as exc:
            errors = exc.errors()
        for error in errors:
            if error["type"] == "extra_forbidden":
                continue  # an unknown key: reported as one already, whatever its value
            key_path, _ = _key_path(error["loc"], trial)
            hit = _value_of(key_path, overridden)
            if hit is None:
                continue
            count += 1
            if len(found) < REPORTED:
                winner = layer_of(layers, hit)
                by = "?" if winner is None else winner.where(hit)
                if winner is not None and winner.name == "command-line flag":
                    by = flag_names.get(".".join(hit), by)
                text = _problem(error, trial, [layer])
                found.append((f"{text} (overridden by {by}, but checked all the same)", error))
    if found:
        raise _invalid(found, count)


def _overridden(layer: Layer, layers: list[Layer]) -> dict[tuple[str, ...], list[str]]:
    """The values `layer` sets that a higher layer overrides: every key path on the way to
    one (the value itself and the tables holding it) -> that value's key path."""
    found: dict[tuple[str, ...], list[str]] = {}
    for path in leaf_paths(layer.data):
        if layer_of(layers, path) is not layer:
            for end in range(len(path), 0, -1):
                found.setdefault(tuple(path[:end]), path)
    return found


def _value_of(
    key_path: list[str], overridden: dict[tuple[str, ...], list[str]]
) -> list[str] | None:
    """The overridden value an error at `key_path` is about, if any: one holds the other (a
    key inside a table the layer set, or a table the layer replaced with a string). Looked up,
    not searched: 20 000 overridden bad values are reported in a second, not minutes."""
    hit = overridden.get(tuple(key_path))
    if hit is not None:
        return hit
    for end in range(len(key_path) - 1, 0, -1):
        hit = overridden.get(tuple(key_path[:end]))
        if hit is not None and len(hit) == end:
            return hit  # inside a value the layer set whole (a list, say)
    return None


def _invalid(found: list[tuple[str, ErrorDetails]], count: int) -> ConfigError:
    """The error naming the first `REPORTED` problems (text, pydantic's error) of `count`."""
    problems = [text for text, _ in found]
    typed = [text for text, error in found if error["type"] in _EXPECTED]
    hints = ["Fix the value(s) above; `interpreter config show --origins` shows every layer."]
    if any(" in -c override:" in text for text in typed):
        hints.append(
            "-c values are TOML: -c key=true, -c key=100, -c 'key=\"text\"' "
            "(a bare word is read as a string)."
        )
    if any(" in environment variable " in text for text in typed):
        hints.append(
            "In the environment a boolean is true or false, a number is written in digits."
        )
    if count > len(found):
        problems.append(f"... and {count - len(found)} more")
    return ConfigError("invalid configuration:\n  " + "\n  ".join(problems), hint=" ".join(hints))


def _problem(error: ErrorDetails, merged: dict[str, Any], layers: list[Layer]) -> str:
    key_path, item = _key_path(error["loc"], merged)
    # A missing key was not set anywhere: the table that lacks it was.
    missing = error["type"] == "missing"
    layer = layer_of(layers, key_path[:-1] if missing else key_path)
    where = layer.where(key_path) if layer else "built-in default"
    dotted = ".".join(key_path) + (f"[{item}]" if item is not None else "")
    if missing:
        return f"`{dotted}` in {where}: is required"
    got = error.get("input")
    if key_path and key_path[-1] in _CREDENTIALS:
        return f"`{dotted}` in {where}: {_expected(error)} (the value is not shown)"
    if error["type"] == "value_error":
        # A table's problem names the entry at fault (a header); the table says nothing.
        expected = _expected(error)
        # A range's message reads like a type's ("expected a whole number >= 1, got …").
        joint = ", got" if expected.startswith("expected ") else "; got"
        shown = "" if isinstance(got, dict) else f"{joint} {_describe(got)}"
        return f"`{dotted}` in {where}: {expected}{shown}"
    tip = ""
    if isinstance(got, str) and _reads_as(error["type"], got):
        tip = " (write it without quotes)"
    return f"`{dotted}` in {where}: {_expected(error)}, got {_describe(got)}{tip}"


def _key_path(loc: tuple[int | str, ...], merged: dict[str, Any]) -> tuple[list[str], int | None]:
    """The config key of an error location, leaving out what pydantic adds that is not a key
    (a union member's name); a list index comes back apart."""
    path: list[str] = []
    node: Any = merged
    for index, part in enumerate(loc):
        if isinstance(node, list) and isinstance(part, int):
            return path, part
        if isinstance(node, dict) and str(part) in node:
            path.append(str(part))
            node = node[str(part)]
        elif index == len(loc) - 1:
            path.append(str(part))  # a required key that is missing: still the one to name
    return path, None


def _expected(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        return f"expected a value {bounds[kind]} {limit}"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return str(error["msg"])


def _reads_as(kind: str, text: str) -> bool:
    """Whether quoted `text` would have been right unquoted (`"100"` for an integer)."""
    try:
        value = json.loads(text.strip())
    except ValueError:
        return False
    if kind == "bool_type":
        return isinstance(value, bool)
    if kind == "int_type":
        return isinstance(value, int) and not isinstance(value, bool)
    return kind == "float_type" and isinstance(value, int | float) and not isinstance(value, bool)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {_short(json.dumps(value, ensure_ascii=False))}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return f"the list {_short(json.dumps(value, ensure_ascii=False, default=str))}"
    return "nothing" if value is None else f"a {type(value).__name__}"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
