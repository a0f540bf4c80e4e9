"""`interpreter batch merge DIR... --out DIR`: the shards' reports combined into the
`summary.json` and `junit.xml` one run over all tasks writes (same function, same records,
same order), with each task's files copied beside them so the merged directory stands alone.
Kept worktrees are not copied: they belong to the machine that ran the shard.

Each shard's `shard.json` lists every task of the batch, so a shard that never reported (its
machine died, its artifact expired) is not merged away silently: its tasks appear as
`missing`, failing the merged reports and the exit code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.output.reportfile import ReportDir
from oiexec.runner.batch.costs import cost_line
from oiexec.runner.batch.layout import JUNIT_FILE, SHARD_FILE, SUMMARY_FILE, open_out
from oiexec.runner.batch.record import (
    MAX_READ,
    STATUSES,
    TaskRecord,
    checked_record,
    read_output,
)
from oiexec.runner.batch.report import batch_exit_code, write_reports
from oiexec.runner.batch.tasks import check_id
from oiexec.runner.batch.workspace import WORKTREE_DIR

__all__ = ["merge_batches", "read_records", "read_summary", "summary_record"]

#: The most of a shard's summary.json read (a batch of 100 000 tasks writes about 60 MiB).
_MAX_SUMMARY = 128 * 1024 * 1024
_HINT = "Merge only directories a batch wrote (--out), as it wrote them."


def merge_batches(
    dirs: Sequence[Path],
    out: Path,
    warn: Callable[[str], None] = lambda _message: None,
    note: Callable[[str], None] = lambda _message: None,
) -> int:
    """Writes the merged reports to `out`; returns the batch's exit code (0 only when every
    task of the batch succeeded, in the shards given). `note` gets what was merged and where
    the reports are, once they are written (a merge that said nothing looked like a no-op)."""
    names, records, seen = read_records(dirs)
    missing = _missing(dirs, seen)
    if missing:
        warn(
            f"batch merge: {len(missing)} task(s) of the batch are in none of the directories "
            f"given (a shard that did not report?): {', '.join(r.id for r in missing)}"
        )
    target = open_out(out)
    try:
        for record in records:
            _copy_task(seen[record.id], target, record.id, warn)
        records += missing
        names_seen = names.pop() if names else "batch"
        write_reports(target, names_seen, records)
    finally:
        target.close()
    note(_merged_message(len(dirs), records, out))
    note(cost_line(names_seen, records))
    return batch_exit_code(records)


def read_records(
    dirs: Sequence[Path],
) -> tuple[set[str], list[TaskRecord], dict[str, Path]]:
    """The batch names and the task records of the summaries in `dirs` (each checked as a
    run writes it), and which directory holds each task; `UsageError` when a task is in two
    of them or they hold different batches."""
    names: set[str] = set()
    records: list[TaskRecord] = []
    seen: dict[str, Path] = {}
    for directory in dirs:
        summary = read_summary(directory)
        names.add(str(summary.get("batch")))
        for position, entry in enumerate(summary.get("tasks", []), start=1):
            record = summary_record(directory / SUMMARY_FILE, position, entry)
            if record.id in seen:
                raise UsageError(
                    f"task {record.id!r} is in both {seen[record.id]} and {directory}",
                    hint="Merge each shard's directory once, and only shards of one batch.",
                )
            seen[record.id] = directory
            records.append(record)
    if len(names) > 1:
        raise UsageError(
            f"these directories hold different batches ({', '.join(sorted(names))})",
            hint="Merge only the shards of one batch (same TASKS file or --name).",
        )
    return names, records, seen


def _merged_message(shards: int, records: Sequence[TaskRecord], out: Path) -> str:
    counts = [(status, sum(r.status == status for r in records)) for status in STATUSES]
    statuses = ", ".join(f"{count} {status}" for status, count in counts if count)
    return (
        f"batch merge: merged {len(records)} task(s) from {shards} director"
        f"{'y' if shards == 1 else 'ies'} ({statuses or 'no tasks'})\n"
        f"batch merge: wrote {out / SUMMARY_FILE} and {out / JUNIT_FILE}"
    )


def _missing(dirs: Sequence[Path], seen: dict[str, Path]) -> list[TaskRecord]:
    """A record for each task the shards' `shard.json` name but no directory holds."""
    batch: list[str] = []
    for directory in dirs:
        raw = read_output(directory, directory / SHARD_FILE)
        try:
            listed = json.loads(raw.decode("utf-8")) if raw is not None else None
        except (ValueError, RecursionError):
            listed = None  # written by every run; a copy without it just cannot be checked
        ids = listed.get("batch_tasks") if isinstance(listed, dict) else None
        if isinstance(ids, list) and len(ids) > len(batch):
            # Only names a run could have written: they become JUnit cases of the merge.
            batch = [i for i in ids if isinstance(i, str) and check_id(i) is None]
    return [
        TaskRecord(
            index=index,
            id=task_id,
            status="missing",
            message="no directory given to `batch merge` holds this task; its shard's "
            "output is missing",
        )
        for index, task_id in enumerate(batch)
        if task_id not in seen
    ]


def read_summary(directory: Path, path: Path | None = None) -> dict[str, Any]:
    """The batch summary `path` (default: `directory`/summary.json), read bounded with no
    link out of `directory` followed; `UsageError` saying what is wrong with it."""
    path = directory / SUMMARY_FILE if path is None else path
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory; name a batch --out directory")
    if not path.exists():
        raise UsageError(f"{directory} has no {SUMMARY_FILE}; is it a batch --out directory?")
    # Read as any file a task could have replaced: no link out of the directory followed.
    raw = read_output(directory, path, max_bytes=_MAX_SUMMARY)
    if raw is None:
        raise UsageError(
            f"cannot read {path}: not a regular file inside {directory}, or larger than "
            f"{_MAX_SUMMARY // (1024 * 1024)} MiB"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise UsageError(f"cannot read {path}: {why}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise UsageError(f"{path} is not a batch summary (no `tasks` list)")
    return data


def summary_record(path: Path, position: int, entry: Any) -> TaskRecord:
    """The summary's task entry at `position`, checked as a run would have written it (a
    summary is read back from a directory tasks could write to; its id names a directory of
    the merge)."""
    try:
        return checked_record(entry)
    except ValueError as exc:
        raise UsageError(f"{path}: task {position}: {exc}", hint=_HINT) from None


def _copy_task(shard: Path, out: ReportDir, task_id: str, warn: Callable[[str], None]) -> None:
    """The task's files (not its worktree) into `out/<id>/`: regular files only, read with no
    link out of the shard's directory followed and written with no link followed (a shard's
    directory is what its tasks left); any other file is left out, and said."""
    src = shard / task_id
    if src.is_symlink():
        # Its task (or another) replaced it: following it would copy whatever it points to
        # (another user's files, the runner's keys) into the merged reports.
        warn(f"batch merge: not copied: {src} is a symbolic link, not the task's directory")
        return
    if not src.is_dir() or src.resolve() == (out.path / task_id).resolve():
        return
    for top, dirs, files in os.walk(src):
        here = Path(top).relative_to(src)
        if here == Path("."):
            dirs[:] = [d for d in dirs if d != WORKTREE_DIR]
        for name in files:
            data = read_output(shard, Path(top) / name)
            if data is None:
                warn(
                    f"batch merge: not copied: {Path(top) / name} (not a regular file inside "
                    f"{shard}, or larger than {MAX_READ // (1024 * 1024)} MiB)"
                )
                continue
            out.write((Path(task_id) / here / name).as_posix(), data)
