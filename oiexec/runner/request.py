"""The frozen request the CLI builds and the runner executes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oiexec.config.loader import ConfigInputs


@dataclass(frozen=True)
class ResumeTarget:
    session_id: str | None = None
    last: bool = False
    all_cwds: bool = False
    #: With `--last`: start a new thread when none matches (otherwise exit 2).
    or_new: bool = False


@dataclass(frozen=True)
class ExecRequest:
    prompt: str
    cwd: Path
    config: ConfigInputs
    #: False when `cwd` is only where the command was started (no `-C`): a resumed or forked
    #: run then works in the session's directory.
    cwd_explicit: bool = True
    images: tuple[Path, ...] = ()
    add_dirs: tuple[Path, ...] = ()
    skip_git_repo_check: bool = False
    ephemeral: bool = False
    json: bool = False
    color: Literal["always", "never", "auto"] = "auto"
    output_last_message: Path | None = None
    #: `--output-schema FILE`: read and checked before the thread starts.
    output_schema_file: Path | None = None
    #: A schema handed over as data by a caller (the review); a schema file replaces it.
    output_schema: dict[str, Any] | None = None
    junit: Path | None = None
    diff: Path | None = None
    max_turns: int | None = None
    timeout: float | None = None
    #: `--max-tokens N`: input + output tokens this run may use (exit 9 past it).
    max_tokens: int | None = None
    #: `--max-cost USD`: what this run may cost at the model's catalog price (exit 10).
    max_cost: float | None = None
    dangerously_bypass: bool = False
    #: `--check CMD`: the run succeeds only when CMD passes after the model's final answer.
    check: str | None = None
    #: `--max-attempts N`: how many final answers the check may reject (None = config/default).
    max_attempts: int | None = None
    resume: ResumeTarget | None = None
    fork_from: str | None = None
    warnings: tuple[str, ...] = field(default=())
