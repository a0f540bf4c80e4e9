"""The TASKS file: JSONL (one task a line) or TOML (`[[tasks]]`), parsed and validated whole
before anything runs, so a typo on line 40 never costs the 39 tasks before it.

Every problem names where it is (`tasks.jsonl:7`, or `tasks.toml: task 3 (line 12)`) and
what to do; all problems are collected and reported together as one `UsageError` (exit 2).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.core.policy import SANDBOX_MODES

__all__ = ["KNOWN_KEYS", "Task", "load_tasks"]

#: key -> (python types accepted, description for messages)
_KEY_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "id": ((str,), "a string"),
    "prompt": ((str,), "a string"),
    "repo": ((str,), "a string (a local path or a git URL)"),
    "ref": ((str,), "a string (a branch, tag or commit)"),
    "check": ((str,), "a string (a shell command)"),
    "model": ((str,), "a string"),
    "harness": ((str,), "a string"),
    "sandbox": ((str,), "a string"),
    "max_turns": ((int,), "a positive integer"),
    "timeout": ((int, float), "a positive number of seconds"),
    "profile": ((str,), "a string"),
}
KNOWN_KEYS: tuple[str, ...] = tuple(_KEY_TYPES)

# An id becomes a directory name under --out and a JUnit test name: keep it portable.
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class Task:
    """One validated task. `index` is its position in TASKS (0-based), which orders every
    report, whichever shard ran it."""

    index: int
    id: str
    prompt: str
    repo: str | None = None
    ref: str | None = None
    check: str | None = None
    model: str | None = None
    harness: str | None = None
    sandbox: str | None = None
    max_turns: int | None = None
    timeout: float | None = None
    profile: str | None = None

    def canonical(self) -> dict[str, Any]:
        """The task's keys as given (position excluded), for the input hash."""
        return {key: getattr(self, key) for key in KNOWN_KEYS if getattr(self, key) is not None}


def load_tasks(path: Path, limit: Callable[[Task], list[str]] | None = None) -> list[Task]:
    """Every task in `path`, or a `UsageError` listing every problem found. `limit` says
    what is wrong with a valid task beyond its own keys (a sandbox looser than the command
    line's: see `ceiling`); its problems are named by line and id like the others."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the tasks file {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    if path.suffix.lower() == ".toml":
        entries, problems = _toml_entries(path, text)
    else:
        entries, problems = _jsonl_entries(path, text)
    tasks: list[Task] = []
    first_line: dict[str, str] = {}
    for where, data in entries:
        task, errors = _validate(len(tasks), data)
        problems += [f"{where}: {error}" for error in errors]
        if task is None:
            continue
        if task.id in first_line:
            problems.append(
                f"{where}: duplicate id {task.id!r} (first used at {first_line[task.id]})"
            )
            continue
        first_line[task.id] = where
        if limit is not None:
            problems += [f"{where}: task {task.id!r}: {problem}" for problem in limit(task)]
        tasks.append(task)
    if not problems and not tasks:
        problems.append(f"{path}: no tasks found")
    if problems:
        raise UsageError(
            f"invalid tasks file {path}:\n  " + "\n  ".join(problems),
            hint="Nothing was run. Fix the lines above and run the batch again.",
        )
    return tasks


def _jsonl_entries(path: Path, text: str) -> tuple[list[tuple[str, Any]], list[str]]:
    entries: list[tuple[str, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name}:{number}"
        try:
            entries.append((where, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: bad JSON ({exc.msg} at column {exc.colno})")
    return entries, problems


def _toml_entries(path: Path, text: str) -> tuple[list[tuple[str, Any]], list[str]]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [], [f"{path.name}: bad TOML ({exc})"]
    unknown = sorted(set(document) - {"tasks"})
    problems = [
        f"{path.name}: unknown top-level key {key!r}; only [[tasks]] is read" for key in unknown
    ]
    tasks = document.get("tasks", [])
    if not isinstance(tasks, list):
        return [], [*problems, f"{path.name}: `tasks` must be an array of tables ([[tasks]])"]
    # `[[tasks]]` headers in file order give each table's line, for messages.
    header_lines = [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip().startswith("[[tasks]]")
    ]
    entries: list[tuple[str, Any]] = []
    for position, data in enumerate(tasks, start=1):
        line = f" (line {header_lines[position - 1]})" if position <= len(header_lines) else ""
        entries.append((f"{path.name}: task {position}{line}", data))
    return entries, problems


def _validate(index: int, data: Any) -> tuple[Task | None, list[str]]:
    if not isinstance(data, dict):
        return None, [f"a task must be an object with `id` and `prompt`, not {_kind(data)}"]
    errors: list[str] = []
    unknown = [key for key in data if key not in _KEY_TYPES]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        errors.append(f"unknown key {names}; known keys: {', '.join(KNOWN_KEYS)}")
    for required in ("id", "prompt"):
        value = data.get(required)
        if value is None:
            errors.append(f"missing `{required}`")
        elif isinstance(value, str) and not value.strip():
            errors.append(f"`{required}` is empty")
    values: dict[str, Any] = {}
    for key, (types, description) in _KEY_TYPES.items():
        if key not in data or data[key] is None:
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, types):
            errors.append(f"`{key}` must be {description}, not {_kind(value)}")
            continue
        values[key] = value
    task_id = values.get("id")
    if isinstance(task_id, str) and task_id.strip() and not _ID_RE.match(task_id):
        errors.append(
            f"id {task_id!r} cannot be used as a directory name: use letters, digits, "
            "'.', '_' and '-' (starting with a letter or digit, at most 128 characters)"
        )
    if "sandbox" in values and values["sandbox"] not in SANDBOX_MODES:
        errors.append(
            f"`sandbox` must be one of {', '.join(SANDBOX_MODES)}, not {values['sandbox']!r}"
        )
    for key in ("max_turns", "timeout"):
        if key in values and values[key] <= 0:
            errors.append(f"`{key}` must be positive, not {values[key]!r}")
    if errors:
        return None, errors
    if "timeout" in values:
        values["timeout"] = float(values["timeout"])
    return Task(index=index, **values), []


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        int: "an integer",
        float: "a number",
    }.get(type(value), type(value).__name__)
