"""A task's result record: `DIR/<id>/result.json`, written atomically once the task ended.

The same record, minus the fields that only make sense inside one output directory
(`input_hash`), is the task's entry in `summary.json`; `merge` rebuilds the reports from
these entries, which is why a merge of shards and a single run write the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oiexec.core.errors import ExitCode
from oiexec.output.reportfile import ReportDir

__all__ = [
    "FINISHED",
    "RECORD_FILE",
    "STATUSES",
    "TaskRecord",
    "Tokens",
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
    "sandbox",
    "interrupted",
    "not_run",
    # Only in a merge: no shard directory given to `batch merge` holds the task.
    "missing",
)
#: Statuses of a task that ended on its own (a record is written); the others mean the
#: batch stopped before or while running it (or, merged, never saw it): it runs again.
FINISHED = frozenset(STATUSES) - {"interrupted", "not_run", "missing"}

_BY_EXIT = {
    ExitCode.SUCCESS: "success",
    ExitCode.MAX_TURNS: "limit",
    ExitCode.TIMEOUT: "timeout",
    ExitCode.SANDBOX_UNAVAILABLE: "sandbox",
    ExitCode.CHECK_FAILED: "check_failed",
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
    duration_s: float = 0.0
    session_id: str | None = None
    #: How many times the task was run (1 + each --retry-failed resume).
    attempts: int = 0
    #: Kept workspace of a task that did not succeed (relative to DIR), for --retry-failed.
    worktree: str | None = None
    paths: dict[str, str] = field(default_factory=dict)
    #: Only in result.json: decides whether a rerun may skip the task.
    input_hash: str | None = None

    def summary_entry(self) -> dict[str, Any]:
        data = asdict(self)
        del data["input_hash"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskRecord:
        fields = dict(data)
        fields["tokens"] = Tokens(**fields.get("tokens", {}))
        return cls(**fields)


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


def read_record(out: Path, path: Path) -> TaskRecord | None:
    """The record at `path` in the output directory `out`; None when absent or unreadable (the
    task then runs again)."""
    raw = read_output(out, path)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        record = TaskRecord.from_dict(data)
    except (OSError, ValueError, TypeError):
        return None
    return record if record.status in FINISHED else None


def write_record(out: ReportDir, record: TaskRecord) -> None:
    """`DIR/<id>/result.json`, atomically (temp file + rename): a killed batch never leaves
    half a record. Written beneath the held output directory, no symlink followed."""
    text = json.dumps(asdict(record), indent=2, ensure_ascii=False) + "\n"
    out.write(f"{record.id}/{RECORD_FILE}", text)
