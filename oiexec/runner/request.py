"""The frozen request the CLI and the Python API build and the runner executes."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oiexec.config.loader import ConfigInputs
from oiexec.core.errors import UsageError


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
    #: `--ignore-rules`: no command rules (`.rules` files) are read or applied.
    ignore_rules: bool = False
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
    #: `--stall-turns N`: the stall watchdog's limit (None: config's `stall_turns`).
    stall_turns: int | None = None
    dangerously_bypass: bool = False
    #: `--check CMD`: the run succeeds only when CMD passes after the model's final answer.
    check: str | None = None
    #: `--max-attempts N`: how many final answers the check may reject (None = config/default).
    max_attempts: int | None = None
    #: `--from-junit FILE...`: JUnit reports whose failing tests the run is to fix
    #: (runner/from_junit.py): they join the prompt and, without a check, derive one.
    from_junit: tuple[Path, ...] = ()
    #: `--require-change`: a run whose diff is empty fails (exit 11).
    require_change: bool = False
    #: `--append-system-prompt TEXT|@FILE` (a file as `@` and its absolute path).
    append_system_prompt: str | None = None
    resume: ResumeTarget | None = None
    fork_from: str | None = None
    warnings: tuple[str, ...] = field(default=())


def new_request(
    prompt: str,
    *,
    cwd: str | os.PathLike[str] | None,
    cwd_name: str,
    profile: str | None = None,
    overrides: Sequence[str] = (),
    flags: Mapping[str, Any] | None = None,
    strict: bool = False,
    add_dirs: Iterable[str | os.PathLike[str]] = (),
    **fields: Any,
) -> ExecRequest:
    """The request as `interpreter exec` and the Python API both build it, so the two load
    config and resolve paths alike: `cwd` (None: the current directory; `cwd_name` is how the
    caller spells it in the error) must exist, relative paths are made absolute now (the run
    may change directory), the flags left None are not given; `fields` are the rest."""
    given = Path(cwd).expanduser() if cwd is not None else Path.cwd()
    if not given.is_dir():
        raise UsageError(
            f"{cwd_name} {given}: no such directory", hint="Pass an existing directory."
        )
    where = Path(os.path.abspath(given))
    return ExecRequest(
        prompt=prompt,
        cwd=where,
        # Without an explicit directory a resumed or forked run works where its session did.
        cwd_explicit=cwd is not None,
        config=ConfigInputs(
            cwd=where,
            profile=profile,
            overrides=tuple(overrides),
            flags={key: value for key, value in (flags or {}).items() if value is not None},
            strict=strict,
        ),
        add_dirs=tuple(Path(os.path.abspath(Path(p).expanduser())) for p in add_dirs),
        **fields,
    )
