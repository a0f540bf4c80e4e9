"""Progress on stderr while a batch runs: a live bar on a TTY, otherwise one line per
finished task (what a CI log or a cron mail can show)."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, TextIO

from oiexec.runner.batch.record import TaskRecord

__all__ = ["Progress"]


class Progress:
    def __init__(self, stream: TextIO, total: int, *, live: bool) -> None:
        self._stream = stream
        self._total = total
        self._done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task_id: Any = None
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

    def finished(self, record: TaskRecord, *, skipped: bool = False) -> None:
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
