"""Every key a run is given either does something or says it doesn't.

Two kinds of key are accepted without doing anything in exec:

- keys oiexec models for Codex compatibility but that mean nothing to a headless run
  (`model_verbosity`, most `features.*`, `approval_policy` other than `never`, `web_search`
  where the harness and wire cannot carry it), listed in `_NO_EFFECT` and decided here;
- keys oiexec does not model but Codex's own config knows (`features.plugins`,
  `model_providers.<id>.supports_websockets`), found by the loader (`LoadedConfig.ignored`)
  against the key list derived from Codex's schema (`oiexec.config.codex_schema`).

Each is reported once per run as "<key>: accepted for compatibility, has no effect in exec"
on stderr and in the run log, never as an `error` item in the JSONL stream (the Codex SDK
passes such keys on every run; its users' item ids must match Codex's). `--strict-config`
makes them config errors (exit 3) naming the key and where it was set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oiexec.config.layers import Layer, layer_of, leaf_paths
from oiexec.config.problems import REPORTED
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError

__all__ = ["EFFECTIVE_FEATURES", "IgnoredKey", "RunFacts", "no_effect_notes", "unknown_features"]

NO_EFFECT = "accepted for compatibility, has no effect in exec"
#: The layer holding what exec forces (`approval_policy = "never"`), not the user's choice.
FORCED_LAYER = "forced by exec"

#: `[features]` names that change what a run does, and where: skills and hooks
#: (oiexec.runner.extras, `codex_hooks` is Codex's older name), deferring MCP tools behind
#: the tool search (oiexec.harness.registry). The web-search ones depend on the run
#: (`RunFacts.web_search_supported`).
EFFECTIVE_FEATURES = frozenset(
    {"skills", "hooks", "codex_hooks", "tool_search_always_defer_mcp_tools"}
)
_WEB_SEARCH_FEATURES = frozenset({"web_search_request", "web_search_cached"})
#: Feature names oiexec has that Codex's schema does not (so they are not typos).
_OIEXEC_FEATURES = frozenset({"skills"})

#: Top-level keys the settings model accepts that a headless run does nothing with, and why.
_NO_EFFECT: dict[str, str] = {
    "model_verbosity": "no wire request carries it yet",
}


@dataclass(frozen=True)
class IgnoredKey:
    """A key Codex's config knows and oiexec does not model, as the loader found it, with
    the layer that set it (None: not known)."""

    key_path: tuple[str, ...]
    layer: Layer | None

    @property
    def where(self) -> str:
        return self.layer.where(list(self.key_path)) if self.layer else "?"


@dataclass(frozen=True)
class RunFacts:
    """What decides whether some keys take effect in this particular run."""

    #: `web_search` reaches the model (the harness sends the hosted tool on this wire).
    web_search_supported: bool = False


def no_effect_notes(
    settings: Settings,
    layers: list[Layer],
    ignored: Iterable[IgnoredKey],
    facts: RunFacts,
    *,
    strict: bool,
) -> list[str]:
    """One note per key set for this run that has no effect; a `ConfigError` naming them all
    instead when `strict`."""
    # Where each key was set is worked out only for the keys named (the slow part).
    found: dict[tuple[str, ...], IgnoredKey] = {}
    for key in ignored:
        found.setdefault(key.key_path, key)
    for key_path, layer, value in _set_keys(layers):
        if _has_no_effect(settings, key_path, value, facts):
            found.setdefault(tuple(key_path), IgnoredKey(tuple(key_path), layer))
    named = [(_dotted(key), where) for key, where in list(found.items())[:REPORTED]]
    more = len(found) - len(named)
    if strict and found:
        lines = [f"`{key}` in {where.where}" for key, where in named]
        raise ConfigError(
            "config keys that have no effect in exec (--strict-config):\n  "
            + "\n  ".join(lines + ([f"... and {more} more"] if more else [])),
            hint="Remove them from the config (or the command line), or drop --strict-config "
            "to run with them reported and ignored.",
        )
    notes = [f"{key}: {NO_EFFECT} ({where.where})" for key, where in named]
    return notes + ([f"{more} more keys: {NO_EFFECT}"] if more else [])


def unknown_features(settings: Settings, layers: list[Layer]) -> list[str]:
    """`[features]` names neither Codex nor oiexec has (a typo such as `--enable skils`): they
    get the unknown-key warning, since `features` takes any name."""
    unknown = [name for name in settings.features if not _known_feature(name)]
    warnings: list[str] = []
    for name in unknown[:REPORTED]:
        owner = layer_of(layers, ["features", name])
        where = owner.where(["features", name]) if owner else "?"
        warnings.append(f"ignoring unknown feature `features.{name}` ({where})")
    if len(unknown) > REPORTED:
        warnings.append(f"ignoring {len(unknown) - REPORTED} more unknown features")
    return warnings


def _profile_chain(settings: Settings) -> set[str]:
    """The `[permissions]` tables the selected profile uses (itself and what it extends)."""
    chain: set[str] = set()
    current = settings.default_permissions
    while current is not None and current in settings.permissions and current not in chain:
        chain.add(current)
        current = settings.permissions[current].extends
    return chain


def _known_feature(name: str) -> bool:
    from oiexec.config.codex_schema import codex_knows

    return name in _OIEXEC_FEATURES or codex_knows(["features", name])


def _set_keys(layers: list[Layer]) -> list[tuple[list[str], Layer, Any]]:
    """Key paths some layer sets for this run (not what exec itself forces), each with the
    highest such layer and the value it gives."""
    found: dict[tuple[str, ...], tuple[list[str], Layer, Any]] = {}
    for layer in layers:
        if layer.name == FORCED_LAYER:
            continue
        for key_path in leaf_paths(layer.data):
            found[tuple(key_path)] = (key_path, layer, _value(layer.data, key_path))
    return list(found.values())


def _has_no_effect(settings: Settings, key_path: list[str], value: Any, facts: RunFacts) -> bool:
    head = key_path[0]
    if head in _NO_EFFECT:
        return True
    if head == "approval_policy":
        # Exec always runs with `never` (as Codex's does); asking for `never` is no surprise.
        return bool(value != "never")
    if head == "model_providers" and key_path[-1] == "requires_openai_auth":
        return True  # no ChatGPT login here: the key comes from `env_key` alone
    if head == "permissions" and len(key_path) >= 2:
        return key_path[1] not in _profile_chain(settings)
    if head == "sandbox_workspace_write" and settings.default_permissions is not None:
        # Profiles do not compose with the older sandbox settings (as in Codex).
        return True
    if head == "web_search":
        return not facts.web_search_supported
    if head == "features" and len(key_path) >= 2:
        name = key_path[1]
        if name in _WEB_SEARCH_FEATURES:
            return not facts.web_search_supported
        # A name nobody knows got the unknown-feature warning already (`unknown_features`).
        return name not in EFFECTIVE_FEATURES and _known_feature(name)
    if head == "tools":
        # Only Codex's older `[tools] web_search = true|false` is read (oiexec.harness.web_search).
        legacy = len(key_path) == 2 and key_path[1] == "web_search"
        return not (legacy and isinstance(settings.tools.get("web_search"), bool)) or not (
            facts.web_search_supported
        )
    return False


def _value(data: dict[str, Any], key_path: list[str]) -> Any:
    node: Any = data
    for part in key_path:
        node = node[part]
    return node


def _dotted(key_path: Iterable[str]) -> str:
    from oiexec.config.codex_schema import format_path

    return format_path(list(key_path))
