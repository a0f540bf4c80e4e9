"""Where the shipped data folders (`harnesses/`, `sandbox_profiles/`) live, and loading the
harness manifests, tool schemas and prompts in them.

In a source checkout or editable install they sit next to the package; in a wheel they are
packed as `oiexec/_data/<name>`.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oiexec.core.errors import ConfigError
from oiexec.harness.spec import HarnessSpec, merge_manifests
from oiexec.tools.table import TABLE, OptionsError

#: The `oiexec` package's directory (this module's grandparent): named without importing the
#: package root, which re-exports the API from the top of the layers.
_PACKAGE_DIR = Path(__file__).resolve().parents[1]

__all__ = [
    "data_dir",
    "harness_dir",
    "harness_ids",
    "load_manifest",
    "load_spec",
    "load_tool_schemas",
    "read_harness_file",
]


def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE_DIR.parent / name, _PACKAGE_DIR / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"oiexec data folder `{name}` is missing from this installation")


def harness_ids() -> list[str]:
    """Every shipped harness, sorted."""
    root = data_dir("harnesses")
    return sorted(p.name for p in root.iterdir() if (p / "harness.toml").is_file())


def harness_dir(harness_id: str) -> Path:
    path = data_dir("harnesses") / harness_id
    if not harness_id or not (path / "harness.toml").is_file():
        raise ConfigError(
            f"unknown harness `{harness_id}`",
            hint=f"Available harnesses: {', '.join(harness_ids())}.",
        )
    return path


@cache
def load_manifest(harness_id: str) -> dict[str, Any]:
    """The raw manifest with its `extends` chain merged in (parent first)."""
    with (harness_dir(harness_id) / "harness.toml").open("rb") as handle:
        raw = tomllib.load(handle)
    parent = raw.get("extends")
    if parent:
        if parent == harness_id:
            raise ConfigError(f"harness `{harness_id}` extends itself")
        raw = merge_manifests(load_manifest(parent), raw)
    return raw


@cache
def load_spec(harness_id: str) -> HarnessSpec:
    """The validated manifest; every tool must have a schema in `tools.json`."""
    try:
        spec = HarnessSpec.model_validate(load_manifest(harness_id))
    except ValidationError as exc:
        raise ConfigError(_invalid_manifest(harness_id, exc)) from exc
    if spec.id != harness_id:
        raise ConfigError(f"harness folder `{harness_id}` declares id `{spec.id}`")
    _check_implementations(harness_id, spec)
    schemas = load_tool_schemas(harness_id)
    missing = [t.name for t in spec.tools if t.name not in schemas]
    if missing:
        raise ConfigError(
            f"harness `{harness_id}`: no schema in tools.json for {', '.join(missing)}"
        )
    return spec


def _invalid_manifest(harness_id: str, exc: ValidationError) -> str:
    """The message for a manifest that does not validate: a tool's options that do not fit
    its implementation in the words of `oiexec.tools.table`, anything else as pydantic says."""
    errors = exc.errors()
    causes = [error.get("ctx", {}).get("error") for error in errors]
    if errors and all(isinstance(cause, OptionsError) for cause in causes):
        return f"harness `{harness_id}`: " + "; ".join(str(cause) for cause in causes)
    return f"harness `{harness_id}` has an invalid manifest: {exc}"


def _check_implementations(harness_id: str, spec: HarnessSpec) -> None:
    """Every `impl` is in the tool table (or added with `register`): a misspelt one fails
    at load, not at the run's first tool call."""
    unknown = [entry for entry in spec.tools if entry.impl not in TABLE]
    if unknown:
        # Only now: the framework imports the command runner, which listing harnesses and
        # the table check need not pay for.
        from oiexec.tools.framework import IMPLS

        unknown = [entry for entry in unknown if entry.impl not in IMPLS]
    if unknown:
        names = ", ".join(f"`{e.impl}` (tool `{e.name}`)" for e in unknown)
        raise ConfigError(
            f"harness `{harness_id}`: no tool implementation {names}",
            hint=f"Implementations: {', '.join(sorted(TABLE))}.",
        )


def _own_or_parent(harness_id: str, name: str) -> Path:
    """`name` in the harness folder, else in the folders it extends."""
    current: str | None = harness_id
    while current:
        path = harness_dir(current) / name
        if path.is_file():
            return path
        with (harness_dir(current) / "harness.toml").open("rb") as handle:
            current = tomllib.load(handle).get("extends") or None
    raise ConfigError(f"harness `{harness_id}` has no `{name}`")


@cache
def load_tool_schemas(harness_id: str) -> dict[str, dict[str, Any]]:
    """Tool name -> {name, description, parameters} as the model sees it."""
    with _own_or_parent(harness_id, "tools.json").open(encoding="utf-8") as handle:
        entries = json.load(handle)
    return {entry["name"]: entry for entry in entries}


def read_harness_file(harness_id: str, name: str) -> str:
    """A prompt or template file of the harness (or of the one it extends)."""
    return _own_or_parent(harness_id, name).read_text(encoding="utf-8")
