"""What an `Agent` and its threads are configured with, and the runner request built from it.

The request is the one `interpreter exec` builds from its flags (cli/request.py), so config
layering and the safety rules are the CLI's: `config` entries become `-c` overrides (the same
dotted keys, the values written as the TOML literals `-c` parses), `model`/`sandbox`/`harness`
are the dedicated flags, and the approval policy is forced to `never`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from oiexec.config.settings import ReasoningEffort
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.policy import SandboxMode
from oiexec.runner.request import ExecRequest, ResumeTarget, new_request

__all__ = [
    "PathLike",
    "ReasoningEffort",
    "SandboxMode",
    "ThreadOptions",
    "TurnOptions",
    "build_request",
    "config_overrides",
]

PathLike: TypeAlias = "str | os.PathLike[str]"

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class ThreadOptions:
    """The settings every turn of a thread runs with (Codex SDK: `ThreadOptions` plus the
    `CodexOptions` that reach the CLI)."""

    model: str | None = None
    sandbox: SandboxMode | None = None
    cwd: PathLike | None = None
    harness: str | None = None
    profile: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    skip_git_repo_check: bool = False
    reasoning_effort: ReasoningEffort | None = None
    network_access: bool | None = None
    additional_directories: Sequence[PathLike] = ()
    ephemeral: bool = False
    strict_config: bool = False
    #: `--ignore-rules`: apply no command rules (docs/rules.md).
    ignore_rules: bool = False
    #: The whole environment of the run (as the Codex SDK's `env`); None: this process's.
    #: Out of the repr, as `api_key`: it holds keys, and options end up in logs.
    env: Mapping[str, str] | None = field(default=None, repr=False)
    #: The built-in `openai` provider's key and base URL (Codex SDK `apiKey`, `baseUrl`).
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None


@dataclass(frozen=True)
class TurnOptions:
    """What one `run` adds: the `exec` flags that apply to a single turn."""

    output_schema: dict[str, Any] | None = None
    max_turns: int | None = None
    timeout: float | None = None
    check: str | None = None
    max_attempts: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    images: tuple[Path, ...] = ()


def build_request(
    options: ThreadOptions, prompt: str, turn: TurnOptions, *, resume_id: str | None = None
) -> ExecRequest:
    """The runner request for one turn: a new thread, or `resume_id` continued."""
    flags: dict[str, Any] = {
        "model": options.model,
        "sandbox_mode": options.sandbox,
        "harness": options.harness,
        "model_reasoning_effort": options.reasoning_effort,
        "sandbox_workspace_write.network_access": options.network_access,
        "openai_base_url": options.base_url,
    }
    _check_path("cwd", options.cwd)
    for directory in options.additional_directories:
        _check_path("additional_directories", directory, required=True)
    _check_positive("max_turns", turn.max_turns)
    _check_positive("timeout", turn.timeout)
    _check_positive("max_tokens", turn.max_tokens)
    _check_positive("max_cost", turn.max_cost)
    _check_positive("max_attempts", turn.max_attempts)
    return new_request(
        prompt,
        cwd=options.cwd,
        cwd_name="cwd",
        profile=options.profile,
        overrides=config_overrides(options.config),
        flags=flags,
        strict=options.strict_config,
        add_dirs=options.additional_directories,
        images=turn.images,
        skip_git_repo_check=options.skip_git_repo_check,
        ephemeral=options.ephemeral,
        ignore_rules=options.ignore_rules,
        json=True,
        color="never",
        output_schema=turn.output_schema,
        max_turns=turn.max_turns,
        timeout=turn.timeout,
        max_tokens=turn.max_tokens,
        max_cost=turn.max_cost,
        check=turn.check,
        max_attempts=turn.max_attempts,
        resume=ResumeTarget(session_id=resume_id) if resume_id else None,
    )


def _check_path(name: str, value: object, *, required: bool = False) -> None:
    if (required or value is not None) and not isinstance(value, str | os.PathLike):
        raise UsageError(f"{name}: {value!r} is not a path", hint="Pass a str or a pathlib.Path.")


def _check_positive(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UsageError(f"{name}={value!r}: expected a number greater than 0")


def config_overrides(config: Mapping[str, Any]) -> tuple[str, ...]:
    """`config` as `-c KEY=VALUE` texts: keys are dotted as `-c` takes them, nested mappings
    are flattened into dotted keys, values are written as TOML literals (so `"123"` stays a
    string and `123` a number, whatever `-c` would guess)."""
    if not isinstance(config, Mapping):
        raise ConfigError(
            f"config must be a mapping of dotted keys to values, got {type(config).__name__}",
            hint='e.g. config={"model_reasoning_effort": "high"}',
        )
    overrides: list[str] = []
    for key, value in config.items():
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"config key {key!r}: expected a non-empty string")
        overrides.extend(_flatten(key.strip(), value))
    return tuple(overrides)


def _flatten(key: str, value: Any) -> list[str]:
    if isinstance(value, Mapping) and value:
        out: list[str] = []
        for sub, inner in value.items():
            if not isinstance(sub, str) or not sub:
                raise ConfigError(f"config key `{key}`: table key {sub!r} is not a string")
            out.extend(_flatten(f"{key}.{_key(sub)}", inner))
        return out
    return [f"{key}={_literal(key, value)}"]


def _key(part: str) -> str:
    return part if _BARE_KEY.match(part) else json.dumps(part)


def _literal(key: str, value: Any) -> str:
    """`value` as a TOML literal; ConfigError naming `key` for what TOML cannot hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        # A JSON string is a TOML basic string: the same escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, os.PathLike):
        return json.dumps(os.fspath(value), ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))} = {_literal(key, v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_literal(key, v) for v in value) + "]"
    raise ConfigError(
        f"config key `{key}`: {type(value).__name__} value {value!r} cannot be a config value",
        hint="Use a string, number, boolean, list or dict (leave a key out to unset it).",
    )
