"""Keys `Settings` does not define, found in the merged config: Codex's keys oiexec does not
model (set aside, reported as having no effect by `oiexec.config.effects`) and unknown ones
(warned about; an error in a permission profile, or in a file under `--strict-config`)."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from oiexec.config.effects import IgnoredKey
from oiexec.config.envtext import without_none
from oiexec.config.layers import Layer, layer_of, leaf_paths
from oiexec.config.problems import REPORTED
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError

__all__ = ["set_aside_unknown", "unknown_keys"]

#: An unknown key: its dotted name, the layer that set it, its path.
_Unknown = tuple[str, Layer | None, list[str]]


def set_aside_unknown(
    merged: dict[str, Any], layers: list[Layer], *, strict: bool
) -> tuple[list[IgnoredKey], list[str], list[str]]:
    """Takes the keys `Settings` does not define out of `merged`. Returns Codex's keys that
    have no effect here, the warnings about unknown keys, and which of those warnings are
    notes: an unknown `OIEXEC_` variable is a note, not a warning (see `LoadedConfig.notes`),
    and is among the warnings too."""
    ignored, unknown = _take_unknown(merged, layers, strict=strict)
    from_env = [entry for entry in unknown if entry[1] is not None and entry[1].variables]
    elsewhere = [entry for entry in unknown if entry[1] is None or not entry[1].variables]
    notes = _name_unknown(from_env)
    return ignored, [*_name_unknown(elsewhere), *notes], notes


def _take_unknown(
    merged: dict[str, Any], layers: list[Layer], *, strict: bool
) -> tuple[list[IgnoredKey], list[_Unknown]]:
    """Takes the keys `Settings` does not define out of `merged`: Codex's keys oiexec does
    not model (ignored, reported as having no effect) and unknown ones (to be warned
    about). An unknown key in a permission profile, or in a file or the environment under
    `--strict-config`, is an error."""
    ignored: list[IgnoredKey] = []
    unknown: list[_Unknown] = []
    for key_path in unknown_keys(Settings, merged):
        dotted = ".".join(key_path)
        owner = layer_of(layers, key_path)
        if key_path[0] == "permissions":
            where = owner.where(key_path) if owner else "?"
            # A profile's rule set aside would be a sandbox rule dropped: never a warning.
            raise ConfigError(
                f"unknown key `{dotted}` in permission profile ({where})",
                hint="A profile takes description, extends, filesystem, network and "
                "workspace_roots; fix the key so no rule is lost.",
            )
        # Imported here: a config without unknown keys (most runs) never needs Codex's list.
        from oiexec.config.codex_schema import codex_knows

        if codex_knows(key_path):
            # Codex's key, not a typo: reported as having no effect (oiexec.config.effects),
            # each value a table holds by its own key, as a user would look it up.
            for leaf in _leaves_at(merged, key_path):
                ignored.append(IgnoredKey(tuple(leaf), layer_of(layers, leaf) or owner))
        elif strict and owner is not None and owner.persistent:
            raise ConfigError(
                f"unknown config key `{dotted}` in {owner.where(key_path)}",
                hint="Remove it, or drop --strict-config to only warn about unknown keys.",
            )
        else:
            unknown.append((dotted, owner, key_path))
        _delete_path(merged, key_path)
    return ignored, unknown


def _name_unknown(unknown: list[_Unknown]) -> list[str]:
    """One line per unknown key, the first few by name. Where each key was set is worked out
    only for the keys named (it is the slow part)."""
    named = [
        f"ignoring unknown config key `{dotted}` ({owner.where(key_path) if owner else '?'})"
        for dotted, owner, key_path in unknown[: REPORTED + 1]
    ]
    if len(unknown) > REPORTED:
        named[REPORTED:] = [f"ignoring {len(unknown) - REPORTED} more unknown config keys"]
    return named


def _leaves_at(data: dict[str, Any], key_path: list[str]) -> list[list[str]]:
    node: Any = data
    for part in key_path:
        node = node[part]
    if isinstance(node, dict) and node:
        return [[*key_path, *leaf] for leaf in leaf_paths(node)]
    return [key_path]


def _delete_path(data: dict[str, Any], key_path: list[str]) -> None:
    node = data
    for part in key_path[:-1]:
        node = node[part]
    node.pop(key_path[-1], None)


# --- validation --------------------------------------------------------------------------


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _dict_value_model(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) is dict:
        args = typing.get_args(annotation)
        return _model_of(args[1]) if len(args) == 2 else None
    return None


def unknown_keys(model: type[BaseModel], data: dict[str, Any]) -> list[list[str]]:
    """Key paths in `data` that `model` does not define (checked through nested tables)."""
    found: list[list[str]] = []
    # A key spelled as in TOML (`otlp-http`) names the field it is the alias of.
    fields = {info.alias: info for info in model.model_fields.values() if info.alias}
    fields.update(model.model_fields)
    for key, value in data.items():
        info = fields.get(key)
        if info is None:
            found.append([key])
            continue
        annotation = without_none(info.annotation)
        nested = _model_of(annotation)
        if nested and isinstance(value, dict):
            found.extend([key, *sub] for sub in unknown_keys(nested, value))
        value_model = _dict_value_model(annotation)
        if value_model and isinstance(value, dict):
            for name, table in value.items():
                if isinstance(table, dict):
                    found.extend([key, name, *sub] for sub in unknown_keys(value_model, table))
    return found
