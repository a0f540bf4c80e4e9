"""Progress while a batch runs: for people on stderr (a live bar on a TTY, otherwise one line
per finished task, what a CI log or a cron mail can show), and with `batch --json` for
programs on stdout, as JSONL events.

The events, one JSON object per line, `type` dotted and lower-case as exec's are
(`thread.started`, `turn.completed`):

- `batch.started`: `batch`, `out`, `shard` ("I/N" or null), `tasks` (how many this run has).
- `task.started`: `id`, `index` (0-based position in TASKS), `shard`, `action` (`run` or
  `resume`); when the batch begins on the task (its worktree is made next).
- `task.completed`: `id`, `index`, `shard`, `status`, `exit_code`, `turns`, `cost_usd`,
  `duration_s`, `session_id`, `message`, `skipped` (true: finished by an earlier run into the
  same --out). Exactly one per task of the run, also for tasks skipped or never started
  (`not_run`, `cost_limit`).
- `batch.completed`: `batch`, `out`, `counts` (tasks per status), `cost_usd` (every task's,
  null when any is unknown), `exit_code`; the last line.
- `batch.failed`: `error.message`, `exit_code`; instead of everything else when the batch
  ends before `batch.started` (a usage error, a signal during start-up).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TextIO

from oiexec.runner.batch.costs import total_cost
from oiexec.runner.batch.record import UNSTARTED, TaskRecord

__all__ = ["Events", "Progress"]


class Events:
    """The JSONL event stream of `batch --json` (a stream of None: no events)."""

    def __init__(self, stream: TextIO | None, *, shard: str | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.shard = shard

    def emit(self, kind: str, **fields: Any) -> None:
        if self._stream is None:
            return
        line = json.dumps({"type": kind, **fields}, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                # The reader went away (`| head`): the batch goes on, its reports are the record.
                self._stream = None

    def failed(self, message: str, exit_code: int) -> None:
        self.emit("batch.failed", error={"message": message}, exit_code=exit_code)

    def task_started(self, task_id: str, index: int, action: str) -> None:
        self.emit("task.started", id=task_id, index=index, shard=self.shard, action=action)

    def task_completed(self, record: TaskRecord, *, skipped: bool = False) -> None:
        self.emit(
            "task.completed",
            id=record.id,
            index=record.index,
            shard=self.shard,
            status=record.status,
            exit_code=record.exit_code,
            turns=record.turns,
            cost_usd=record.cost_usd,
            duration_s=record.duration_s,
            session_id=record.session_id,
            message=record.message,
            skipped=skipped,
        )

    def batch_completed(
        self, name: str, out: str, records: Sequence[TaskRecord], exit_code: int
    ) -> None:
        counts = dict(Counter(record.status for record in records))
        cost = total_cost(records)
        self.emit(
            "batch.completed", batch=name, out=out, counts=counts, cost_usd=cost,
            exit_code=exit_code,
        )  # fmt: skip


class Progress:
    def __init__(
        self, stream: TextIO, total: int, *, live: bool, events: Events | None = None
    ) -> None:
        self._stream = stream
        self._total = total
        self._done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task_id: Any = None
        self.events = events if events is not None else Events(None)
        if live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("[bold]batch[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=Console(file=stream),
                transient=False,
            )

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
            self._task_id = self._bar.add_task("", total=self._total)
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def note(self, message: str) -> None:
        """A message that must not tear the bar."""
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(message, highlight=False, markup=False)
            else:
                self._stream.write(message + "\n")
                self._stream.flush()

    def started(self, task_id: str, index: int, action: str) -> None:
        self.events.task_started(task_id, index, action)

    def finished(self, record: TaskRecord, *, skipped: bool = False) -> None:
        self.events.task_completed(record, skipped=skipped)
        if record.status in UNSTARTED:
            return  # never started: the table at the end says so, the bar does not move
        with self._lock:
            self._done += 1
            done = self._done
        suffix = " (finished in an earlier run)" if skipped else f" in {record.duration_s:.1f}s"
        line = f"[{done}/{self._total}] {record.id}: {record.status}"
        if record.exit_code not in (None, 0):
            line += f" (exit {record.exit_code})"
        line += suffix
        if self._bar is not None:
            self._bar.update(self._task_id, advance=1, description=f"{record.id}: {record.status}")
            if record.status != "success":
                self.note(line)
        else:
            self.note(line)
