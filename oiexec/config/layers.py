"""One source of settings (a TOML file, the environment, the command line) and how layers merge.

A layer knows where each of its keys came from, so a bad or unknown key can be reported with
its file and line, or with the environment variable that set it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config.overrides import nest, split_dotted_key
from oiexec.core.errors import ConfigError, UsageError

__all__ = ["Layer", "deep_merge", "layer_of", "leaf_paths", "nest_dotted", "read_toml_layer"]


@dataclass(frozen=True)
class Layer:
    """`path` is set for files, `variables` for the environment; the command line has neither."""

    name: str
    data: dict[str, Any]
    path: Path | None = None
    text: str | None = None
    #: Where this layer's keys sit inside `text` (a `[profiles.NAME]` table).
    key_prefix: tuple[str, ...] = ()
    #: The key path each environment variable sets -> the variable's name.
    variables: Mapping[tuple[str, ...], str] = field(default_factory=dict)

    @property
    def persistent(self) -> bool:
        """Set outside this command line (a file or the environment), so `--strict-config`
        treats its unknown keys as errors rather than typos of the moment."""
        return self.path is not None or bool(self.variables)

    def variable(self, key_path: list[str]) -> str | None:
        """The environment variable that set `key_path` (or a table holding it)."""
        for end in range(len(key_path), 0, -1):
            name = self.variables.get(tuple(key_path[:end]))
            if name is not None:
                return name
        return None

    def where(self, key_path: list[str]) -> str:
        """Where `key_path` was set, for error messages: `file:line`, or the variable."""
        variable = self.variable(key_path)
        if variable is not None:
            return f"environment variable {variable}"
        if self.path is None:
            return self.name
        line = _find_line(self.text or "", [*self.key_prefix, *key_path])
        return f"{self.path}:{line}" if line else str(self.path)

    def origin(self, key_path: list[str]) -> str:
        """The layer as `config show --origins` names it for `key_path`."""
        variable = self.variable(key_path)
        if variable is not None:
            return f"{self.name} ({variable})"
        return self.name if self.path is None else f"{self.name} ({self.where(key_path)})"


def read_toml_layer(name: str, path: Path) -> Layer | None:
    """The file as a layer; None when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"invalid TOML in {path}: {exc}",
            hint="Fix the syntax at the line shown (see https://toml.io).",
        ) from exc
    return Layer(name, data, path, text)


def layer_of(layers: list[Layer], key_path: list[str]) -> Layer | None:
    """The highest layer that sets `key_path` (or a value above it), which is where its
    effective value came from."""
    for layer in reversed(layers):
        node: Any = layer.data
        for part in key_path:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            return layer
    return None


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; any other value in `top` replaces the one in `base`."""
    result = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def nest_dotted(flat: dict[str, Any]) -> dict[str, Any]:
    """{"a.b": 1} -> {"a": {"b": 1}}"""
    result: dict[str, Any] = {}
    for key, value in flat.items():
        result = deep_merge(result, nest(key.split("."), value))
    return result


def leaf_paths(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[list[str]]:
    """Key paths of every value that is not a non-empty table."""
    paths: list[list[str]] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            paths.extend(leaf_paths(value, (*prefix, key)))
        else:
            paths.append([*prefix, key])
    return paths


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _find_line(text: str, key_path: list[str]) -> int | None:
    """Best-effort line number of a key in TOML text (tomllib keeps no positions)."""
    table: list[str] = []
    leaf = key_path[-1]
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _dotted(header.group(1))
            continue
        key, sep, _ = line.partition("=")
        if not sep:
            continue
        parts = _dotted(key)
        if [*table, *parts] == key_path or (table == key_path[:-1] and parts == [leaf]):
            return number
        if [*table, *parts] == key_path[: len(table) + len(parts)] and parts:
            return number
    return None


def _dotted(key: str) -> list[str]:
    """A TOML dotted key's parts, quoted parts kept whole (`projects."/a/b.c"`)."""
    try:
        return split_dotted_key(key.strip())
    except UsageError:
        return []
