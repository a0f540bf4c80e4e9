"""The batch run: plan every task, run the ones that need it `--jobs` at a time, and write
the reports, also when SIGINT/SIGTERM stops it half-way.

On the first SIGINT/SIGTERM no further task starts, each running child gets SIGTERM (exec
ends it as an interrupt: exit 143, session closed), and whatever still runs after
`STOP_GRACE_S` is killed. Finished tasks keep their records; the rest are `interrupted` or
`not_run` in the reports, and a rerun with the same --out starts them again.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import TextIO

from oiexec.core.errors import ExitCode, UsageError
from oiexec.git import GitError
from oiexec.runner.batch.layout import SHARD_FILE, open_out, write_first
from oiexec.runner.batch.plan import Action, Shard, decide, input_hash, select
from oiexec.runner.batch.progress import Progress
from oiexec.runner.batch.record import RECORD_FILE, TaskRecord, read_record
from oiexec.runner.batch.report import batch_exit_code, print_table, write_reports
from oiexec.runner.batch.task_run import PATHS, BatchContext, Children, run_task
from oiexec.runner.batch.tasks import Task, load_tasks
from oiexec.runner.batch.workspace import Source, resolve_source

__all__ = ["SHARD_FILE", "BatchOptions", "run_batch"]

STOP_GRACE_S = 10.0


@dataclass
class BatchOptions:
    tasks_file: Path
    out: Path
    name: str
    jobs: int
    shard: Shard | None
    retry_failed: bool
    #: Exec options for every task, in command-line form (they count in the input hash).
    exec_options: Sequence[str] = ()
    timeout_s: float | None = None
    #: What is wrong with a task beyond its keys (a sandbox looser than the command line's,
    #: `ceiling.Ceiling.problems`): reported with the tasks file's problems, before any run.
    limit: Callable[[Task], list[str]] | None = None
    cwd: Path = field(default_factory=Path.cwd)
    stop_grace_s: float = STOP_GRACE_S


def run_batch(options: BatchOptions, stream: TextIO = sys.stderr) -> int:
    """Runs the batch; returns its exit code (see `report.batch_exit_code`). A bad tasks file
    or an unusable repository raises `UsageError` before anything runs."""
    # Absolute from here on: worktrees are added by git running in the task's repository, where
    # a relative `--out` would land inside the source checkout.
    options = replace(options, out=Path(os.path.abspath(options.cwd / options.out)))
    every = load_tasks(options.tasks_file, options.limit)
    tasks = select(every, options.shard)
    sources = _resolve_sources(tasks, options.cwd)
    out = options.out
    # Held from here on; a directory that cannot take the batch's files is a usage error now,
    # not an internal one after every task ran.
    held = open_out(out)
    write_first(held, SHARD_FILE, _shard_file(options, tasks, every))

    plan: list[tuple[Task, Action, TaskRecord | None, str]] = []
    for task in tasks:
        digest = input_hash(task, options.exec_options, sources[task.id].base)
        previous = read_record(out, out / task.id / RECORD_FILE)
        if previous is not None:
            # Another task's record (copied or planted) is not this one's; and the file may
            # have been reordered since: the record takes the task's position now.
            previous = replace(previous, index=task.index) if previous.id == task.id else None
        plan.append(
            (task, decide(previous, digest, retry_failed=options.retry_failed), previous, digest)
        )

    children = Children()
    ctx = BatchContext(
        out=out,
        options=options.exec_options,
        timeout_s=options.timeout_s,
        children=children,
        opened=held,
    )
    records: dict[str, TaskRecord] = {}
    skipped: set[str] = set()
    with Progress(stream, len(plan), live=stream.isatty()) as progress:
        for task, action, previous, _digest in plan:
            if action is Action.SKIP and previous is not None:
                records[task.id] = previous
                skipped.add(task.id)
                progress.finished(previous, skipped=True)

        def work(
            task: Task, action: Action, previous: TaskRecord | None, digest: str
        ) -> TaskRecord:
            if children.stopping.is_set():
                return _unfinished(task, "not_run")
            try:
                return run_task(
                    task, sources[task.id], action, previous, digest, ctx, progress.note
                )
            except Exception as exc:  # the per-task boundary: one task's bug never stops the rest
                record = _unfinished(task, "failed")
                record.message = f"internal error running the task: {type(exc).__name__}: {exc}"
                return record

        todo = [entry for entry in plan if entry[1] is not Action.SKIP]
        with (
            _stop_on_signals(children, progress) as stop,
            ThreadPoolExecutor(
                max_workers=max(1, options.jobs), thread_name_prefix="batch"
            ) as pool,
        ):
            pending: set[Future[TaskRecord]] = {pool.submit(work, *entry) for entry in todo}
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    records[record.id] = record
                    if record.status != "not_run":
                        progress.finished(record)
                if stop.since is not None and time.monotonic() - stop.since > options.stop_grace_s:
                    children.signal_all(signal.SIGKILL)
    ordered = [records.get(task.id) or _unfinished(task, "not_run") for task in tasks]
    code = batch_exit_code(ordered)
    try:
        write_reports(ctx.out_dir, options.name, ordered)
    except OSError as exc:
        # E.g. a task (whose sandbox reaches DIR) made a directory of summary.json: said, and
        # the batch fails, but the table below still shows what the tasks came to.
        stream.write(f"batch: could not write the reports in {out}: {exc.strerror or exc}\n")
        code = code or int(ExitCode.FAILED)
    finally:
        ctx.out_dir.close()
    print_table(options.name, ordered, skipped, out, stream)
    return code


def _resolve_sources(tasks: Sequence[Task], cwd: Path) -> dict[str, Source]:
    sources: dict[str, Source] = {}
    problems: list[str] = []
    cache: dict[tuple[str | None, str | None], Source] = {}
    for task in tasks:
        key = (task.repo, task.ref)
        try:
            if key not in cache:
                cache[key] = resolve_source(task.repo, task.ref, cwd=cwd)
            sources[task.id] = cache[key]
        except GitError as exc:
            problems.append(f"task {task.id!r}: {exc}")
    if problems:
        raise UsageError(
            "cannot prepare the tasks' repositories:\n  " + "\n  ".join(problems),
            hint="Nothing was run. Fix `repo`/`ref` of these tasks and run the batch again.",
        )
    return sources


def _unfinished(task: Task, status: str) -> TaskRecord:
    return TaskRecord(
        index=task.index,
        id=task.id,
        status=status,
        paths={key: f"{task.id}/{name}" for key, name in PATHS.items() if key != "stderr"},
    )


def _shard_file(options: BatchOptions, tasks: Sequence[Task], every: Sequence[Task]) -> str:
    """Which slice this directory holds, and every task of the batch (so `batch merge` can
    tell a shard that never reported); kept out of summary.json so shards merge exactly."""
    data = {
        "batch": options.name,
        "tasks_file": str(options.tasks_file),
        "shard": None if options.shard is None else str(options.shard),
        "tasks": [task.id for task in tasks],
        "batch_tasks": [task.id for task in every],
    }
    return json.dumps(data, indent=2) + "\n"


@dataclass
class _Stop:
    since: float | None = None


@contextmanager
def _stop_on_signals(children: Children, progress: Progress) -> Iterator[_Stop]:
    """SIGINT/SIGTERM: stop starting tasks and ask the running ones to end; a second signal
    kills them at once."""
    stop = _Stop()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if stop.since is not None:
            children.signal_all(signal.SIGKILL)
            return
        stop.since = time.monotonic()
        children.stopping.set()
        count = children.signal_all(signal.SIGTERM)
        name = signal.Signals(signum).name
        progress.note(f"{name}: stopping the batch; {count} running task(s) asked to end")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
