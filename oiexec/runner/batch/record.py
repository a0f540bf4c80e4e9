"""A task's result record: `DIR/<id>/result.json`, written atomically once the task ended.

The same record, minus the fields that only make sense inside one output directory
(`input_hash`), is the task's entry in `summary.json`; `merge` rebuilds the reports from
these entries, which is why a merge of shards and a single run write the same bytes.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oiexec.core.errors import FAILURE_CLASSES, ExitCode, failure_class_for_exit
from oiexec.core.numbers import MAX_SECONDS, NumberRange
from oiexec.output.reportfile import ReportDir

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "FINISHED",
    "RECORD_FILE",
    "STATUSES",
    "UNSTARTED",
    "Attempt",
    "TaskRecord",
    "Tokens",
    "checked_record",
    "failure_class_of_record",
    "is_session_id",
    "read_output",
    "read_record",
    "status_for_exit",
    "write_record",
]

RECORD_FILE = "result.json"

#: Every status a task can have, in the order the totals list them.
STATUSES = (
    "success",
    "failed",
    "limit",
    "timeout",
    "check_failed",
    # Exit 11: `require_change` (or `--require-change`) and the task changed no file.
    "no_change",
    # Exit 0, but the read-only sandbox refused the task's writes: what was asked could not
    # be done (`refused_writes` counts them), so it is not a success.
    "write_refused",
    "sandbox",
    "interrupted",
    "not_run",
    # Not started: `--max-total-cost` was reached (or a finished task's cost was unknown).
    "cost_limit",
    # Only in a merge: no shard directory given to `batch merge` holds the task.
    "missing",
)
#: Statuses of a task that ended on its own (a record is written); the others mean the
#: batch stopped before or while running it (or, merged, never saw it): it runs again.
FINISHED = frozenset(STATUSES) - {"interrupted", "not_run", "cost_limit", "missing"}
#: Statuses of a task that was never started: it cost nothing.
UNSTARTED = frozenset({"not_run", "cost_limit"})

_BY_EXIT = {
    ExitCode.SUCCESS: "success",
    ExitCode.MAX_TURNS: "limit",
    ExitCode.STALLED: "limit",
    ExitCode.TIMEOUT: "timeout",
    ExitCode.SANDBOX_UNAVAILABLE: "sandbox",
    ExitCode.CHECK_FAILED: "check_failed",
    ExitCode.NO_CHANGE: "no_change",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "interrupted",
}


def status_for_exit(code: int) -> str:
    """The status of a task whose `interpreter exec` exited with `code` (1, 2, 3 and any
    unexpected code are `failed`; the exit code itself is kept beside it)."""
    try:
        return _BY_EXIT.get(ExitCode(code), "failed")
    except ValueError:
        return "failed"


def failure_class_of_record(record: TaskRecord) -> str | None:
    """A finished task's failure class; for a record written before runs said theirs, what
    its exit code implies (a status with no exit code is the batch's own doing: internal)."""
    if record.status == "success":
        return None
    if record.failure_class is not None:
        return record.failure_class
    if record.exit_code is None:
        return "internal"
    return failure_class_for_exit(record.exit_code) or "internal"


@dataclass
class Tokens:
    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int = 0

    def add(self, other: Tokens) -> None:
        self.input += other.input
        self.cached_input += other.cached_input
        self.output += other.output
        self.reasoning += other.reasoning


@dataclass
class Attempt:
    """One run of a task: how it ended. A retried task keeps one per run, oldest first."""

    status: str
    exit_code: int | None = None
    #: Its failure class (docs/exec.md "Failure classes"); None when it succeeded.
    failure_class: str | None = None


@dataclass
class TaskRecord:
    """What one task came to. Paths are relative to the batch's output directory."""

    index: int
    id: str
    status: str
    exit_code: int | None = None
    #: Why it did not succeed (`turn.failed`'s message, or what the batch saw); None on success.
    message: str | None = None
    turns: int = 0
    tokens: Tokens = field(default_factory=Tokens)
    #: What the task cost in USD, every attempt included (its session's total); None when
    #: unknown (no price for its model, or it was killed before it could say).
    cost_usd: float | None = None
    duration_s: float = 0.0
    session_id: str | None = None
    #: How many times the task was run (1 + each --retry-failed / --retry resume).
    attempts: int = 0
    #: The failure class of the last run (docs/exec.md "Failure classes"), which
    #: `batch --retry CLASSES` selects on; None on success and for a task never started.
    failure_class: str | None = None
    #: Every run of the task, oldest first, each with its own status and class.
    history: list[Attempt] = field(default_factory=list)
    #: Writes the read-only sandbox refused in its last run (its JUnit report's
    #: `sandbox_refused_writes`); with exit 0 they make the status `write_refused`.
    refused_writes: int = 0
    #: Kept workspace of a task that did not succeed (relative to DIR), for --retry-failed.
    worktree: str | None = None
    paths: dict[str, str] = field(default_factory=dict)
    #: Only in result.json: decides whether a rerun may skip the task.
    input_hash: str | None = None
    #: A run of a matrix (`batch --matrix/--repeat`): the task's id in TASKS, the combination
    #: it ran with and its repeat number; absent from the files of a plain batch.
    task: str | None = None
    combination: dict[str, str] | None = None
    repeat: int | None = None

    def summary_entry(self) -> dict[str, Any]:
        data = self.as_json()
        del data["input_hash"]
        return data

    def as_json(self) -> dict[str, Any]:
        """The record as result.json holds it; a plain batch's without the matrix fields, so
        its files are what they were before matrices existed."""
        data = asdict(self)
        for key in _MATRIX_FIELDS:
            if data[key] is None:
                del data[key]
        return data


_MATRIX_FIELDS = ("task", "combination", "repeat")


#: The most of one task file the batch reads (events.jsonl of a long run included).
MAX_READ = 256 * 1024 * 1024


def read_output(directory: Path, path: Path, max_bytes: int = MAX_READ) -> bytes | None:
    """The file `path` inside a batch output `directory`, read as the runner reads anything a
    task may have replaced (a task's sandbox can reach DIR under a shared /tmp): a regular
    file beneath `directory`, no symlink out of it followed, bounded (sandbox/reader). None when
    it is missing or refused."""
    from oiexec.sandbox.reader import ReadScope, read_file

    try:
        return read_file(ReadScope.confined(directory), path, max_bytes=max_bytes).data
    except OSError:
        return None


_SESSION_ID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
#: A task's duration as a run records it.
_DURATION = NumberRange(integer=False, minimum=0, maximum=MAX_SECONDS, unit="seconds")
#: A task's cost as a run records it: finite, so that a batch's total stays a JSON number.
_COST = NumberRange(integer=False, minimum=0, maximum=1e12, unit="USD")


def checked_record(data: Any) -> TaskRecord:
    """`data` (a result.json, or a summary entry) as a record a run could have written;
    `ValueError` saying what is not. Both are read back from a directory tasks could write to:
    a wrong type would fail the reports after every task ran, an id could name a path out of
    the directory, and a huge duration sums to Infinity, which is not JSON."""
    from pydantic import ValidationError

    from oiexec.runner.batch.tasks import check_id

    try:
        record = _adapter().validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the entry"
        raise ValueError(f"{where}: {error['msg']}") from None
    problem = check_id(record.id)
    if problem is not None:
        raise ValueError(problem)
    if record.status not in STATUSES:
        raise ValueError(f"unknown status {record.status[:60]!r}")
    classes = [record.failure_class, *(attempt.failure_class for attempt in record.history)]
    for value in classes:
        if value is not None and value not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure class {value[:60]!r}")
    problem = _matrix_problem(record)
    if problem is not None:
        raise ValueError(problem)
    if record.refused_writes < 0:
        raise ValueError(f"refused_writes: must be 0 or more, not {record.refused_writes}")
    problem = _DURATION.problem(record.duration_s)
    if problem is not None:
        raise ValueError(f"duration_s: {problem}")
    problem = None if record.cost_usd is None else _COST.problem(record.cost_usd)
    if problem is not None:
        raise ValueError(f"cost_usd: {problem}")
    if record.session_id is not None and not is_session_id(record.session_id):
        raise ValueError(f"session_id {record.session_id[:60]!r} is not a session id")
    return record


def _matrix_problem(record: TaskRecord) -> str | None:
    """What is wrong with a matrix run's fields (they label report rows and JUnit suites)."""
    from oiexec.runner.batch.matrix import MATRIX_KEYS, value_problem
    from oiexec.runner.batch.tasks import check_id

    if record.task is not None and check_id(record.task) is not None:
        return f"task: {check_id(record.task)}"
    if record.repeat is not None and not 1 <= record.repeat <= 1_000_000:
        return f"repeat: must be a positive number, not {record.repeat}"
    for key, value in (record.combination or {}).items():
        if key not in MATRIX_KEYS:
            return f"combination: unknown key {key[:60]!r}"
        problem = value_problem(value)
        if problem is not None:
            return f"combination: {key} {problem}"
    return None


def is_session_id(value: str) -> bool:
    """Whether `value` is a session id as a run writes one (a UUID). `--retry-failed` passes a
    task's recorded id to `exec resume` on a command line, so anything else there, e.g.
    `--sandbox=danger-full-access` planted by another task, must never be taken for one."""
    return _SESSION_ID_RE.fullmatch(value) is not None


@functools.cache
def _adapter() -> TypeAdapter[TaskRecord]:
    # Built once (a fifth of a second): a rerun reads one record per task.
    from pydantic import TypeAdapter

    return TypeAdapter(TaskRecord)


def read_record(out: Path, path: Path) -> TaskRecord | None:
    """The record at `path` in the output directory `out`; None when absent, unreadable or
    not a record a run writes (the task then runs again)."""
    raw = read_output(out, path)
    if raw is None:
        return None
    try:
        record = checked_record(json.loads(raw.decode("utf-8")))
    except (ValueError, RecursionError):
        return None
    return record if record.status in FINISHED else None


def write_record(out: ReportDir, record: TaskRecord) -> None:
    """`DIR/<id>/result.json`, atomically (temp file + rename): a killed batch never leaves
    half a record. Written beneath the held output directory, no symlink followed."""
    text = json.dumps(record.as_json(), indent=2, ensure_ascii=False) + "\n"
    out.write(f"{record.id}/{RECORD_FILE}", text)
