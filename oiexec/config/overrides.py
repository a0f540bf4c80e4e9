"""`-c key=value` parsing: dotted keys (quoted segments allowed), TOML literal values."""

from __future__ import annotations

import tomllib
from typing import Any

from oiexec.config import tomltext
from oiexec.core.errors import ConfigError, UsageError


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
        return tomltext.loads(f"value = {raw}")["value"]
    except tomltext.TomlTooDeep as exc:
        raise ConfigError(
            f"-c value `{_short(raw)}`: {str(exc).removeprefix('line 1: ')}",
            hint="A config value nests a few levels at most.",
        ) from None
    except tomllib.TOMLDecodeError:
        return raw


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_override(text: str) -> tuple[list[str], Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(
            f"Invalid --config value `{text}`",
            hint="Use -c key=value, e.g. -c model=gpt-5.5 or "
            "-c sandbox_workspace_write.network_access=true",
        )
    key_path = split_dotted_key(key.strip())
    if len(key_path) > tomltext.MAX_DEPTH:
        raise ConfigError(
            f"-c key `{_short(key.strip())}` has {len(key_path)} parts; a config key has at "
            f"most {tomltext.MAX_DEPTH}",
        )
    return key_path, parse_value(raw.strip())


def nest(path: list[str], value: Any) -> dict[str, Any]:
    """["a", "b"], 1 -> {"a": {"b": 1}}"""
    result: Any = value
    for part in reversed(path):
        result = {part: result}
    assert isinstance(result, dict)
    return result
