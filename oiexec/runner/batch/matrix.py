"""`batch --matrix KEY=V1,V2 ... --repeat K`: every task of TASKS run once per combination of
the matrix values (the cartesian product of the keys, in the order given) and K times each.

Each such run is a task of its own to the rest of the batch (its own id, worktree, session
and record), so shards, resumes, retries and merges treat it as any task: the expanded list
is the batch's task list, and a shard is a slice of it. Order: task by task as in TASKS, then
combination by combination, then repeat by repeat; `index` is the position in that list.

A run's id is `<task id>.<one slug per matrix value>.r<repeat>` (`fix-login.gpt-5.5.native.r2`):
a directory name (tasks.check_id) however odd the model's name. A value that is not already
such a name (`openai/gpt-5:latest`) becomes its safe characters plus a hash of the value
(`openai-gpt-5-latest-1f3a9c`), so two values never share a slug; an id that would be longer
than an id may be is cut and made unique by a hash of the whole run.

A task that sets a key the matrix varies (its own `model` under `--matrix model=...`) is an
error naming the task: which of the two was meant cannot be told, and a comparison in which
one task quietly kept its own model would compare nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.runner.batch.tasks import Task, check_id

__all__ = [
    "MATRIX_KEYS",
    "MAX_REPEAT",
    "Matrix",
    "expand",
    "parse_matrix",
    "run_fields",
    "run_id",
    "value_problem",
]

#: The task keys a matrix may vary: what picks the model, the agent's tools and prompt, and a
#: named configuration (which may set both, or anything else).
MATRIX_KEYS = ("model", "harness", "profile")
#: Repeats of one run; more says nothing pass@k at this many does not.
MAX_REPEAT = 100
#: Values of one key (a matrix is a product: 50 x 50 x 50 is already too many runs).
_MAX_VALUES = 50
#: Longest matrix value (a model or profile name).
_MAX_VALUE = 200
_ID_MAX = 128
_SLUG_MAX = 40
_SAFE_RE = re.compile(r"[A-Za-z0-9._-]+")
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Matrix:
    """The `--matrix` keys with their values (in the order given) and `--repeat`."""

    axes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    repeat: int = 1

    @property
    def used(self) -> bool:
        """Whether the batch is a matrix run at all (plain batches stay as they were)."""
        return bool(self.axes) or self.repeat > 1

    def combinations(self) -> list[tuple[tuple[str, str], ...]]:
        keys = [key for key, _ in self.axes]
        products = itertools.product(*(values for _, values in self.axes))
        return [tuple(zip(keys, values, strict=True)) for values in products]


def value_problem(value: str) -> str | None:
    """What is wrong with a matrix value (also a report label and a command-line value)."""
    if not value.strip():
        return "is empty"
    if value != value.strip():
        return f"{value[:60]!r} has spaces around it"
    if len(value) > _MAX_VALUE:
        return f"is longer than {_MAX_VALUE} characters"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return f"{value[:60]!r} contains a control character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{value[:60]!r} is not valid Unicode"
    return None


def parse_matrix(specs: Sequence[str], repeat: int | None) -> Matrix:
    """`--matrix model=a,b --matrix harness=native` and `--repeat 3`; `UsageError` naming the
    flag and what to write for anything else."""
    axes: list[tuple[str, tuple[str, ...]]] = []
    for spec in specs:
        key, sep, rest = spec.partition("=")
        key = key.strip()
        if not sep or key not in MATRIX_KEYS:
            raise UsageError(
                f"--matrix {spec[:80]!r}: expected KEY=VALUE,VALUE... with KEY one of "
                f"{', '.join(MATRIX_KEYS)}",
                hint="E.g. --matrix model=gpt-5.5,claude-sonnet-4-5 --matrix harness=native",
            )
        if any(key == seen for seen, _ in axes):
            raise UsageError(
                f"--matrix {key}= is given twice",
                hint=f"Give each key once, with all its values: --matrix {key}=A,B",
            )
        values = tuple(value.strip() for value in rest.split(","))
        for value in values:
            problem = value_problem(value)
            if problem is not None:
                raise UsageError(f"--matrix {key}: a value {problem}")
        if key == "harness":
            _check_harnesses(values)
        if len(set(values)) != len(values):
            raise UsageError(f"--matrix {key}: a value is given twice ({rest[:80]})")
        if len(values) > _MAX_VALUES:
            raise UsageError(f"--matrix {key}: more than {_MAX_VALUES} values")
        axes.append((key, values))
    count = 1 if repeat is None else repeat
    if not 1 <= count <= MAX_REPEAT:
        raise UsageError(f"--repeat must be between 1 and {MAX_REPEAT}, not {count}")
    return Matrix(tuple(axes), count)


def _check_harnesses(values: Sequence[str]) -> None:
    """A harness name is checked now: a typo would otherwise fail every run it is in."""
    from oiexec.harness.data import harness_ids

    known = harness_ids()
    unknown = [value for value in values if value not in known]
    if unknown:
        raise UsageError(
            f"--matrix harness: unknown harness {unknown[0][:60]!r}",
            hint=f"Available harnesses: {', '.join(known)}.",
        )


def _slug(value: str) -> str:
    """`value` as part of a directory name, distinct for distinct values."""
    if _SAFE_RE.fullmatch(value) and len(value) <= _SLUG_MAX:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:6]
    safe = _UNSAFE_RE.sub("-", value).strip("-.") or "v"
    return f"{safe[: _SLUG_MAX - 7]}-{digest}"


def run_id(task_id: str, combination: Sequence[tuple[str, str]], repeat: int) -> str:
    """The id of one run: `<task id>.<slug of each value>.r<repeat>` (see the module doc)."""
    parts = [task_id, *(_slug(value) for _, value in combination), f"r{repeat}"]
    whole = ".".join(parts)
    if len(whole) <= _ID_MAX:
        return whole
    canonical = json.dumps([task_id, list(combination)], ensure_ascii=False)
    suffix = f".{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:12]}.r{repeat}"
    return task_id[: _ID_MAX - len(suffix)].rstrip(".") + suffix


def expand(
    tasks: Sequence[Task], matrix: Matrix, limit: Callable[[Task], list[str]] | None = None
) -> list[Task]:
    """The runs of `tasks` under `matrix` (see the module doc); `tasks` themselves when no
    matrix is used. `limit` (the sandbox ceiling) is asked again about runs whose profile
    the matrix set. `UsageError` listing every task that sets a varied key, and any id
    clash."""
    if not matrix.used:
        return list(tasks)
    keys = [key for key, _ in matrix.axes]
    clashes = [
        f"task {task.id!r} sets `{key}`, which --matrix varies"
        for task in tasks
        for key in keys
        if getattr(task, key) is not None
    ]
    if clashes:
        raise UsageError(
            "the matrix and the tasks file both set a key:\n  " + "\n  ".join(clashes[:50]),
            hint="Remove the key from those tasks, or from --matrix. Nothing was run.",
        )
    runs: list[Task] = []
    problems: list[str] = []
    combinations = matrix.combinations()
    for task in tasks:
        for combination in combinations:
            for repeat in range(1, matrix.repeat + 1):
                values: dict[str, Any] = dict(combination)
                run = replace(
                    task,
                    index=len(runs),
                    id=run_id(task.id, combination, repeat),
                    base_id=task.id,
                    combination=combination,
                    repeat=repeat,
                    **values,
                )
                if "profile" in values and limit is not None:
                    problems += [f"{run.id}: {problem}" for problem in limit(run)]
                runs.append(run)
    seen: set[str] = set()
    for run in runs:
        problem = check_id(run.id)
        if problem is not None:
            problems.append(problem)
        key = run.id.lower()  # ids are directories: one filesystem may not tell case apart
        if key in seen:
            problems.append(f"two runs (or a run and a task) would share the id {run.id!r}")
        seen.add(key)
    if problems:
        raise UsageError(
            "cannot run this matrix:\n  " + "\n  ".join(problems[:50]),
            hint="Nothing was run. Rename the tasks or change --matrix.",
        )
    return runs


def run_fields(task: Task) -> dict[str, Any]:
    """A run's matrix fields for its record (none for a plain task)."""
    if task.combination is None:
        return {}
    return {"task": task.base_id, "combination": dict(task.combination), "repeat": task.repeat}
