"""One source of settings (a TOML file, the environment, the command line) and how layers merge.

A layer knows where each of its keys came from, so a bad or unknown key can be reported with
its file and line, or with the environment variable that set it.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config import tomltext
from oiexec.config.overrides import nest, split_dotted_key
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.userfile import CONFIG_MAX, read_user_file_if_exists, user_text

__all__ = [
    "Layer",
    "Origins",
    "deep_merge",
    "layer_of",
    "leaf_paths",
    "nest_dotted",
    "read_toml_layer",
]


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

    def __post_init__(self) -> None:
        # Everything below walks layers recursively (merging, naming each key's origin), so
        # data too deep for that is refused here, however it was made: a file (already
        # scanned), `-c a.a.a…` or an environment variable's JSON; and a NUL, which would
        # fail wherever the value is used as a path, a command or a name.
        found = tomltext.unusable(self.data)
        if found is not None:
            key_path, problem = found
            where = self.where(key_path) if key_path else self.describe()
            key = ".".join(part.replace("\0", "\\0") for part in key_path) or "the config"
            raise ConfigError(
                f"`{key}` in {where} {problem}",
                hint="Remove that part of the config; a config nests a few levels at most and "
                "holds no NUL characters.",
            )

    def describe(self) -> str:
        """The layer for a message: its file, its environment variables, or its name."""
        if self.path is not None:
            return f"config file {self.path}"
        if self.variables:
            return "environment variable " + ", ".join(sorted(set(self.variables.values())))
        return self.name

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
        line = _first_line(self._lines, [*self.key_prefix, *key_path])
        return f"{self.path}:{line}" if line else str(self.path)

    @functools.cached_property
    def _lines(self) -> dict[tuple[str, ...], int]:
        # Worked out once per file: a file with thousands of unknown keys is reported key by
        # key, and scanning its text for each one was quadratic (minutes for 20 000 keys).
        return _line_index(self.text or "")

    def origin(self, key_path: list[str]) -> str:
        """The layer as `config show --origins` names it for `key_path`."""
        variable = self.variable(key_path)
        if variable is not None:
            return f"{self.name} ({variable})"
        return self.name if self.path is None else f"{self.name} ({self.where(key_path)})"


def read_toml_layer(name: str, path: Path) -> Layer | None:
    """The file as a layer; None when it does not exist."""
    what = f"cannot read config file {path}"
    raw = read_user_file_if_exists(path, name=what, cap=CONFIG_MAX, error=ConfigError)
    if raw is None:
        return None
    text = user_text(raw, name=what, error=ConfigError)
    try:
        data = tomltext.loads(text)
    except tomltext.TomlTooDeep as exc:
        raise ConfigError(
            f"invalid TOML in {path}: {exc}",
            hint="A config nests a few levels at most; fix or remove that part of the file.",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"invalid TOML in {path}: {exc}",
            hint="Fix the syntax at the line shown (see https://toml.io).",
        ) from exc
    return Layer(name, data, path, text)


class Origins(MutableMapping[str, str]):
    """dotted key -> the layer that set it, as `config show --origins` names it: for each
    key any layer sets as a value, the highest such layer. Worked out when asked (a file's
    lines are searched to name them, which a config with thousands of keys makes slow), and
    assignable (review names `model`'s origin after its `review_model`)."""

    def __init__(self, layers: list[Layer]) -> None:
        self._layers = layers
        self._given: dict[str, str] = {}
        self._leaves: dict[str, tuple[Layer, list[str]]] | None = None

    def _owners(self) -> dict[str, tuple[Layer, list[str]]]:
        if self._leaves is None:
            self._leaves = {}
            for layer in self._layers:
                for key_path in leaf_paths(layer.data):
                    self._leaves[".".join(key_path)] = (layer, key_path)
        return self._leaves

    def __getitem__(self, key: str) -> str:
        if key in self._given:
            return self._given[key]
        layer, key_path = self._owners()[key]
        return layer.origin(key_path)

    def __setitem__(self, key: str, value: str) -> None:
        self._given[key] = value

    def __delitem__(self, key: str) -> None:
        given = self._given.pop(key, None)
        if self._owners().pop(key, None) is None and given is None:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        yield from self._owners()
        yield from (key for key in self._given if key not in self._owners())

    def __len__(self) -> int:
        return sum(1 for _ in self)


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


#: A dotted key of bare parts, the common case, split without the quote-aware parser.
_BARE_KEY = re.compile(r"\s*([A-Za-z0-9_-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*)\s*")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _line_index(text: str) -> dict[tuple[str, ...], int]:
    """Each key path a line of TOML text sets (its table's path and the line's dotted key),
    with the first line that sets it (tomllib keeps no positions; this is a best effort)."""
    index: dict[tuple[str, ...], int] = {}
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _dotted(header.group(1))
            continue
        key, sep, _ = line.partition("=")
        if not sep:
            continue
        bare = _BARE_KEY.fullmatch(key)
        parts = [part.strip() for part in bare.group(1).split(".")] if bare else _dotted(key)
        if parts:
            index.setdefault((*table, *parts), number)
    return index


def _first_line(index: dict[tuple[str, ...], int], key_path: list[str]) -> int | None:
    """The first line setting `key_path` or a table holding it (`a = { b = 1 }` sets `a.b`)."""
    lines = [index.get(tuple(key_path[:end])) for end in range(1, len(key_path) + 1)]
    found = [line for line in lines if line is not None]
    return min(found) if found else None


def _dotted(key: str) -> list[str]:
    """A TOML dotted key's parts, quoted parts kept whole (`projects."/a/b.c"`)."""
    try:
        return split_dotted_key(key.strip())
    except UsageError:
        return []
