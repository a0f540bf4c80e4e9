"""`-c key=value` parsing: dotted keys (quoted segments allowed), TOML literal values."""

from __future__ import annotations

import tomllib
from typing import Any

from oiexec.core.errors import UsageError


def split_dotted_key(key: str) -> list[str]:
    """`projects."/a/b".trust_level` -> ["projects", "/a/b", "trust_level"]."""
    parts: list[str] = []
    current = ""
    quote: str | None = None
    for char in key:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if quote:
        raise UsageError(f"Invalid --config key `{key}`: unterminated quote")
    parts.append(current.strip())
    if any(not part for part in parts):
        raise UsageError(f"Invalid --config key `{key}`: empty segment")
    return parts


def parse_value(raw: str) -> Any:
    """A TOML literal when it parses as one (`true`, `3`, `["a"]`, `"x"`), else the raw string,
    so `-c model=gpt-5` works without quoting."""
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw


def parse_override(text: str) -> tuple[list[str], Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(
            f"Invalid --config value `{text}`",
            hint="Use -c key=value, e.g. -c model=gpt-5.5 or "
            "-c sandbox_workspace_write.network_access=true",
        )
    return split_dotted_key(key.strip()), parse_value(raw.strip())


def nest(path: list[str], value: Any) -> dict[str, Any]:
    """["a", "b"], 1 -> {"a": {"b": 1}}"""
    result: Any = value
    for part in reversed(path):
        result = {part: result}
    assert isinstance(result, dict)
    return result
