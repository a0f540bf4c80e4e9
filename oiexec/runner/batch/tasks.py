"""The TASKS file: JSONL (one task a line) or TOML (`[[tasks]]`), parsed and validated whole
before anything runs, so a typo on line 40 never costs the 39 tasks before it.

Every problem names where it is (`tasks.jsonl:7`, or `tasks.toml: task 3 (line 12)`) and
what to do; all problems are collected and reported together as one `UsageError` (exit 2).

A tasks file is often written by someone other than the operator (generated, committed to a
repository, produced by an earlier run), so nothing in it is trusted: whatever its bytes,
loading ends in tasks or that one error, never another exception. An id becomes a directory
name under --out, so it is held to a portable name that cannot be one of the batch's own
files (`check_id`); every other string ends up in an argv, a path or UTF-8 text, so NUL and
unpaired surrogates are refused; numbers take the ranges of the exec flags they become.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.core.numbers import COUNT, SECONDS, NumberRange
from oiexec.core.policy import SANDBOX_MODES
from oiexec.core.userfile import TASKS_MAX, read_user_file
from oiexec.runner.batch.layout import RESERVED_NAMES

__all__ = [
    "ID_RULE",
    "KNOWN_KEYS",
    "Task",
    "check_id",
    "load_tasks",
    "parse_tasks",
]

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
    # `--require-change` for this task (true), or not even when the batch gives it (false).
    "require_change": ((bool,), "true or false"),
    # `--from-junit` for each: JUnit reports whose failing tests are the task (then `prompt`
    # is optional); relative paths are the tasks file's, as a task's `repo` is.
    "from_junit": ((str, list), "a path or a list of paths (JUnit XML reports)"),
}
KNOWN_KEYS: tuple[str, ...] = tuple(_KEY_TYPES)

# An id becomes a directory name under --out and a JUnit test name: keep it portable. ASCII
# only, no separator, no leading dot (so never `.`, `..`, a hidden file or the batch's own
# temp files), no control character. Used with fullmatch: `$` would let a final newline in.
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
ID_RULE = (
    "use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 128 "
    "characters)"
)
#: The numeric keys' ranges: those of the exec flags they are passed on as (`--max-turns`,
#: `--timeout`), so a task the file accepts is never refused by its own run.
_RANGES: dict[str, NumberRange] = {"max_turns": COUNT, "timeout": SECONDS}
#: A `[[tasks]]` table header (spaced or quoted as TOML allows), for the line in messages.
_HEADER_RE = re.compile(r"""\s*\[\[\s*(?:tasks|"tasks"|'tasks')\s*\]\]""")
#: Problems listed in the error before the rest are only counted (a generated file with
#: every line wrong must not produce a message as long as itself).
_MAX_PROBLEMS = 50
#: Characters of a value shown in a message.
_SHOW = 60


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
    require_change: bool | None = None
    #: Absolute paths (resolved against the tasks file's directory when loaded).
    from_junit: tuple[str, ...] | None = None
    #: A run of a matrix (runner/batch/matrix.py): the task's id in TASKS, the combination
    #: (key, value) pairs of `--matrix` it runs with, and its repeat (1..`--repeat`).
    base_id: str | None = None
    combination: tuple[tuple[str, str], ...] | None = None
    repeat: int | None = None

    def canonical(self) -> dict[str, Any]:
        """The task's keys as given (position excluded), for the input hash; a matrix run's
        combination and repeat too (a plain task's stays as it always was)."""
        keys = {key: getattr(self, key) for key in KNOWN_KEYS if getattr(self, key) is not None}
        if self.combination is not None:
            keys["matrix"] = dict(self.combination)
            keys["repeat"] = self.repeat
        return keys


def check_id(task_id: str) -> str | None:
    """What is wrong with `task_id` as a task's directory name under --out, or None."""
    if not _ID_RE.fullmatch(task_id):
        return f"id {_show(task_id)} cannot be used as a directory name: {ID_RULE}"
    if task_id.lower() in RESERVED_NAMES:
        return (
            f"id {_show(task_id)} cannot be used as a directory name: the batch writes its "
            f"own files beside the task directories ({', '.join(sorted(RESERVED_NAMES))}, "
            "in any case); choose another id"
        )
    return None


def load_tasks(path: Path, limit: Callable[[Task], list[str]] | None = None) -> list[Task]:
    """Every task in `path`, or a `UsageError` listing every problem found. `limit` says
    what is wrong with a valid task beyond its own keys (a sandbox looser than the command
    line's: see `ceiling`); its problems are named by line and id like the others."""
    raw = read_user_file(path, name=f"cannot read the tasks file {path}", cap=TASKS_MAX)
    return parse_tasks(path, raw, limit)


def parse_tasks(
    path: Path, raw: bytes, limit: Callable[[Task], list[str]] | None = None
) -> list[Task]:
    """The tasks in `raw`, the content of the tasks file `path` (its suffix picks the format,
    its name goes into messages); `UsageError` as `load_tasks`."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UsageError(
            f"{path} is not UTF-8 (line {line}, byte {exc.start}); save it as UTF-8"
        ) from None
    if path.suffix.lower() == ".toml":
        entries, problems = _toml_entries(path, text)
    else:
        entries, problems = _jsonl_entries(path, text)
    tasks: list[Task] = []
    # By id without case: two ids that differ only in case are one directory on macOS or
    # Windows, where an output directory is often copied or merged.
    first: dict[str, tuple[str, str]] = {}
    for where, data in entries:
        if isinstance(data, _Unparsed):
            problems.append(f"{where}: {data.problem}")
            continue
        task, errors = _validate(len(tasks), data)
        problems += [f"{where}: {error}" for error in errors]
        if task is None:
            continue
        if task.from_junit:
            task = dataclasses.replace(task, from_junit=_beside(path, task.from_junit))
        earlier = first.get(task.id.lower())
        if earlier is not None:
            other, at = earlier
            if other == task.id:
                problems.append(f"{where}: duplicate id {task.id!r} (first used at {at})")
            else:
                problems.append(
                    f"{where}: id {task.id!r} differs from {other!r} (at {at}) only in case; "
                    "ids name directories, which macOS and Windows do not tell apart by case"
                )
            continue
        first[task.id.lower()] = (task.id, where)
        if limit is not None:
            problems += [f"{where}: task {task.id!r}: {problem}" for problem in limit(task)]
        tasks.append(task)
    if not problems and not tasks:
        problems.append(f"{path.name}: no tasks found")
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more")
        raise UsageError(
            f"invalid tasks file {path}:\n  " + "\n  ".join(shown),
            hint="Nothing was run. Fix the lines above and run the batch again.",
        )
    return tasks


def _beside(tasks_file: Path, paths: tuple[str, ...]) -> tuple[str, ...]:
    """`paths` made absolute against the tasks file's directory: a task runs in a worktree,
    and the file is where its author wrote them down."""
    base = os.path.dirname(os.path.abspath(tasks_file))
    return tuple(os.path.join(base, os.path.expanduser(p)) for p in paths)


@dataclass(frozen=True)
class _Unparsed:
    """A line of the file that is not JSON, in place of its value."""

    problem: str


def _jsonl_entries(path: Path, text: str) -> tuple[list[tuple[str, Any]], list[str]]:
    entries: list[tuple[str, Any]] = []
    # Lines end at "\n" only, as JSONL's do: `splitlines` would also cut at U+2028, form feeds
    # and the like, which may stand raw inside a JSON string, and miscount lines.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name}:{number}"
        # A line that does not parse keeps its place: problems are listed in file order.
        try:
            entries.append((where, json.loads(line)))
        except json.JSONDecodeError as exc:
            entries.append((where, _Unparsed(f"bad JSON ({exc.msg} at column {exc.colno})")))
        except RecursionError:
            entries.append((where, _Unparsed("bad JSON (nested too deeply)")))
        except ValueError as exc:  # an integer too long to convert, say
            entries.append((where, _Unparsed(f"bad JSON ({_clip(str(exc))})")))
    return entries, []


def _toml_entries(path: Path, text: str) -> tuple[list[tuple[str, Any]], list[str]]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [], [f"{path.name}: bad TOML ({exc})"]
    except RecursionError:
        return [], [f"{path.name}: bad TOML (nested too deeply)"]
    except ValueError as exc:  # an integer too long to convert, say
        return [], [f"{path.name}: bad TOML ({_clip(str(exc))})"]
    unknown = sorted(set(document) - {"tasks"})
    problems = [
        f"{path.name}: unknown top-level key {_show(key)}; only [[tasks]] is read"
        for key in unknown
    ]
    tasks = document.get("tasks", [])
    if not isinstance(tasks, list):
        return [], [*problems, f"{path.name}: `tasks` must be an array of tables ([[tasks]])"]
    # `[[tasks]]` headers in file order give each table's line, for messages; trusted only
    # when there is one per task (an inline `tasks = [...]`, or a header inside a multi-line
    # string, would shift them onto the wrong tasks).
    header_lines = [
        number for number, line in enumerate(text.split("\n"), start=1) if _HEADER_RE.match(line)
    ]
    if len(header_lines) != len(tasks):
        header_lines = []
    entries: list[tuple[str, Any]] = []
    for position, data in enumerate(tasks, start=1):
        line = f" (line {header_lines[position - 1]})" if header_lines else ""
        entries.append((f"{path.name}: task {position}{line}", data))
    return entries, problems


def _validate(index: int, data: Any) -> tuple[Task | None, list[str]]:
    if not isinstance(data, dict):
        return None, [f"a task must be an object with `id` and `prompt`, not {_kind(data)}"]
    errors: list[str] = []
    unknown = [key for key in data if key not in _KEY_TYPES]
    if unknown:
        names = ", ".join(_show(key) for key in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        errors.append(f"unknown key {names}{more}; known keys: {', '.join(KNOWN_KEYS)}")
    # A task seeded from JUnit reports has its instructions there (runner/from_junit).
    for required in ("id",) if data.get("from_junit") else ("id", "prompt"):
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
        # A JSON boolean is a Python int: only the keys that take booleans accept one.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            errors.append(f"`{key}` must be {description}, not {_kind(value)}")
            continue
        if key == "from_junit":
            value, problem = _report_paths(value)
            if problem is not None:
                errors.append(f"`from_junit` {problem}")
                continue
        elif isinstance(value, str):
            problem = _string_problem(value)
            if problem is not None:
                errors.append(f"`{key}` {problem}")
                continue
        elif key in _RANGES:
            problem = _RANGES[key].problem(value)
            if problem is not None:
                errors.append(f"`{key}`: {problem}, not {_clip(repr(value))}")
                continue
        values[key] = value
    task_id = values.get("id")
    if isinstance(task_id, str) and task_id.strip():
        problem = check_id(task_id)
        if problem is not None:
            errors.append(problem)
    if "sandbox" in values and values["sandbox"] not in SANDBOX_MODES:
        errors.append(
            f"`sandbox` must be one of {', '.join(SANDBOX_MODES)}, not {_show(values['sandbox'])}"
        )
    if errors:
        return None, errors
    if "timeout" in values:
        values["timeout"] = float(values["timeout"])
    values.setdefault("prompt", "")
    return Task(index=index, **values), []


def _report_paths(value: object) -> tuple[tuple[str, ...], str | None]:
    """`from_junit`'s paths (a string or a list, as `_KEY_TYPES` checked), or what is wrong
    with them."""
    paths = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    if not paths:
        return (), "is an empty list; name at least one JUnit report, or leave the key out"
    for path in paths:
        if not isinstance(path, str):
            return (), f"must list paths (strings), not {_kind(path)}"
        if not path.strip():
            return (), "names an empty path"
        problem = _string_problem(path)
        if problem is not None:
            return (), problem
    return tuple(paths), None


def _string_problem(value: str) -> str | None:
    """Every string ends up in an argv (no NUL possible), a path or UTF-8 text (no lone
    surrogate, which JSON's `\\ud800` can spell)."""
    if "\0" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"is not valid Unicode (an unpaired surrogate U+{ord(value[exc.start]):04X} at "
            f"character {exc.start}); write the character itself, or both halves of its pair"
        )
    return None


def _show(value: str) -> str:
    """`value` quoted for a message, cut short: a line of a tasks file can be megabytes."""
    return _clip(repr(value))


def _clip(text: str) -> str:
    return text if len(text) <= _SHOW else text[: _SHOW - 3] + "..."


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
