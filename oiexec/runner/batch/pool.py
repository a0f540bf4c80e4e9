"""The batch run: plan every task, run the ones that need it `--jobs` at a time, and write
the reports, also when SIGINT/SIGTERM stops it half-way.

On the first SIGINT/SIGTERM no further task starts: a task whose workspace is being made
when it comes is not started at all, a task being started gets SIGTERM as it starts, each
running task gets SIGTERM (exec ends it as an interrupt: exit 143, its commands killed, its
session closed), and only a task still running `STOP_GRACE_S` later is killed. Finished tasks
keep their records; the rest are `interrupted` or `not_run` in the reports, and a rerun with
the same --out starts them again. A signal during start-up (tasks file, repositories) ends
the batch at once, with nothing written.

The signal handler only takes note (`_Stop`): the main thread's loop does the signalling and
the printing, so the handler never waits on a lock the interrupted main thread holds.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
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
from oiexec.output.ci import CiReporter, RunSummary
from oiexec.runner.batch.ci_summary import batch_summary, child_environment
from oiexec.runner.batch.costs import TotalCost, cost_line
from oiexec.runner.batch.layout import SHARD_FILE, open_out, write_first
from oiexec.runner.batch.matrix import Matrix, expand, run_fields
from oiexec.runner.batch.plan import Action, Shard, decide, input_hash, select
from oiexec.runner.batch.progress import Events, Progress
from oiexec.runner.batch.record import RECORD_FILE, UNSTARTED, TaskRecord, read_record
from oiexec.runner.batch.report import batch_exit_code, print_table, write_reports
from oiexec.runner.batch.task_run import PATHS, BatchContext, Children, run_task
from oiexec.runner.batch.tasks import Task, load_tasks
from oiexec.runner.batch.workspace import Source, resolve_source
from oiexec.runner.ci_report import ci_reporting
from oiexec.runner.reports import ReportPaths

__all__ = ["SHARD_FILE", "BatchOptions", "run_batch"]

STOP_GRACE_S = 10.0
#: How often the main thread looks at the running tasks and at a signal taken.
_TICK_S = 0.1


@dataclass
class BatchOptions:
    tasks_file: Path
    out: Path
    name: str
    jobs: int
    shard: Shard | None
    #: Failure classes whose tasks a rerun resumes (`--retry`; `--retry-failed` is all).
    retry: frozenset[str]
    #: Exec options for every task, in command-line form (they count in the input hash).
    exec_options: Sequence[str] = ()
    timeout_s: float | None = None
    #: What is wrong with a task beyond its keys (a sandbox looser than the command line's,
    #: `ceiling.Ceiling.problems`): reported with the tasks file's problems, before any run.
    limit: Callable[[Task], list[str]] | None = None
    cwd: Path = field(default_factory=Path.cwd)
    stop_grace_s: float = STOP_GRACE_S
    #: Where `shard` came from (`--shard`, `CI_NODE_INDEX/CI_NODE_TOTAL`, ...), said on stderr.
    shard_source: str | None = None
    #: Called with the number of tasks to run just before the first one starts, when there
    #: is one (`warm.warm_up`: the launcher started, the model catalog looked up once).
    warm_up: Callable[[int], None] | None = None
    #: `--max-total-cost`: no task starts once the tasks' costs add up to this (USD).
    max_total_cost: float | None = None
    #: `--matrix`/`--repeat`: each task becomes one run per combination and repeat (matrix.py).
    matrix: Matrix = field(default_factory=Matrix)


class _StoppedEarly(BaseException):
    """Raised from the signal handler while the batch is still starting up."""


@dataclass
class _Stop:
    """What the signal handler saw; acted on by the main thread (`_Stop.act`)."""

    children: Children
    #: While True a signal raises `_StoppedEarly`: nothing runs yet, nothing to wait for.
    early: bool = True
    since: float | None = None
    signals: int = 0
    name: str = "SIGINT"
    #: (tasks under way, tasks not begun): read by the handler without a lock (len() of a
    #: set is atomic), so the note counts the tasks as they were when the signal came.
    tally: Callable[[], tuple[int, int]] = lambda: (0, 0)
    counted: tuple[int, int] = (0, 0)
    _acted: int = 0
    _killed: bool = False

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals += 1
        if self.since is None:
            self.since = time.monotonic()
            self.name = signal.Signals(signum).name
            self.counted = self.tally()
            # Event.set takes a lock only waiting threads use; the main thread never waits on it.
            self.children.stopping.set()
        if self.early:
            raise _StoppedEarly

    def act(self, progress: Progress, grace_s: float) -> None:
        """In the main thread: what the signals taken since the last call ask for."""
        if self.since is None:
            return
        if self._acted == 0:
            self.children.signal_all(signal.SIGTERM)
            under_way, queued = self.counted
            progress.note(
                f"{self.name}: stopping the batch; {under_way} task(s) under way asked to end, "
                f"{queued} not started"
            )
        elif self.signals > self._acted and not self._killed:
            progress.note(f"{self.name} again: killing the tasks still running")
        insist = self.signals > 1
        if not self._killed and (insist or time.monotonic() - self.since > grace_s):
            self._killed = True
            self.children.signal_all(signal.SIGKILL)
        elif self._killed:
            # A task that was being started when the kill went out is killed as it appears.
            self.children.signal_all(signal.SIGKILL)
        self._acted = self.signals


@contextmanager
def _signals_noted(stop: _Stop) -> Iterator[_Stop]:
    previous = {sig: signal.signal(sig, stop.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_batch(
    options: BatchOptions, stream: TextIO = sys.stderr, events: Events | None = None
) -> int:
    """Runs the batch; returns its exit code (see `report.batch_exit_code`). A bad tasks file
    or an unusable repository raises `UsageError` before anything runs. `events`: the JSONL
    progress stream of `batch --json` (progress.py)."""
    events = events if events is not None else Events(None)
    children = Children()
    stop = _Stop(children)
    # In GitHub Actions the step summary is opened now, before any task runs, as every report
    # is; the batch reports once (the tasks' children do not get the variable), and a batch
    # that stops before it ran reports why.
    paths = ReportPaths(untrusted=(Path(os.path.abspath(options.cwd / options.out)),))
    with ci_reporting(paths, command="batch") as ci:
        try:
            with _signals_noted(stop):
                return _run(options, stream, events, stop, ci)
        except _StoppedEarly:
            message = f"{stop.name}: the batch stopped while starting up; no task was started"
            stream.write(f"batch: {message}\n")
            stream.flush()
            events.failed(message, int(ExitCode.INTERRUPTED))
            if ci is not None:
                ci.finish(RunSummary("batch", "interrupted", ExitCode.INTERRUPTED, message))
            return int(ExitCode.INTERRUPTED)


def _run(
    options: BatchOptions, stream: TextIO, events: Events, stop: _Stop, ci: CiReporter | None
) -> int:
    # Absolute from here on: worktrees are added by git running in the task's repository, where
    # a relative `--out` would land inside the source checkout.
    options = replace(options, out=Path(os.path.abspath(options.cwd / options.out)))
    # With a matrix the runs are the batch's tasks: shards, resumes and reports see only them.
    every = expand(load_tasks(options.tasks_file, options.limit), options.matrix, options.limit)
    tasks = select(every, options.shard)
    if options.shard is not None:
        source = options.shard_source or "--shard"
        stream.write(
            f"batch: shard {options.shard} (from {source}): {len(tasks)} of {len(every)} task(s)\n"
        )
        stream.flush()
    sources = _resolve_sources(tasks, options.cwd)
    out = options.out
    # Held from here on; a directory that cannot take the batch's files is a usage error now,
    # not an internal one after every task ran.
    held = open_out(out)
    try:
        write_first(held, SHARD_FILE, _shard_file(options, tasks, every))
        plan = _plan(options, tasks, sources)
        todo = [entry for entry in plan if entry[1] is not Action.SKIP]
        if todo and options.warm_up is not None:
            options.warm_up(len(todo))
    except BaseException:
        held.close()
        raise
    lock = threading.Lock()
    begun: set[str] = set()
    under_way: set[str] = set()
    stop.tally = lambda: (len(under_way), len(todo) - len(begun))
    # From here on a signal is only noted: the reports are written whatever comes.
    stop.early = False
    children = stop.children
    ctx = BatchContext(
        out=out,
        options=options.exec_options,
        timeout_s=options.timeout_s,
        children=children,
        opened=held,
        env=child_environment(os.environ),
    )
    events.shard = None if options.shard is None else str(options.shard)
    events.emit(
        "batch.started", batch=options.name, out=str(out), shard=events.shard, tasks=len(plan)
    )
    records: dict[str, TaskRecord] = {}
    skipped: set[str] = set()
    budget = TotalCost(options.max_total_cost)
    with Progress(stream, len(plan), live=stream.isatty(), events=events) as progress:
        for task, action, previous, _digest in plan:
            if action is Action.SKIP and previous is not None:
                records[task.id] = previous
                skipped.add(task.id)
                budget.charge(previous)
                progress.finished(previous, skipped=True)

        def work(
            task: Task, action: Action, previous: TaskRecord | None, digest: str
        ) -> TaskRecord:
            with lock:
                if children.stopping.is_set():
                    return _unfinished(task, "not_run")
                refusal = budget.refusal()
                if refusal is not None:
                    unstarted = _unfinished(task, "cost_limit")
                    unstarted.message = refusal
                    return unstarted
                begun.add(task.id)
                under_way.add(task.id)
            record = _unfinished(task, "failed")
            try:
                progress.started(task.id, task.index, action.value)
                record = run_task(
                    task, sources[task.id], action, previous, digest, ctx, progress.note
                )
            except Exception as exc:  # the per-task boundary: one task's bug never stops the rest
                record.message = f"internal error running the task: {type(exc).__name__}: {exc}"
                record.cost_usd = None  # whatever it spent is not known
            finally:
                with lock:
                    under_way.discard(task.id)
                    # Before this worker takes its next task: with --jobs 1 the limit is
                    # checked against every task that ran before.
                    budget.charge(record)
            return record

        pending: set[Future[TaskRecord]] = set()
        with ThreadPoolExecutor(
            max_workers=max(1, options.jobs), thread_name_prefix="batch"
        ) as pool:
            if not children.stopping.is_set():
                pending = {pool.submit(work, *entry) for entry in todo}
            while True:
                stop.act(progress, options.stop_grace_s)
                if not pending:
                    break
                done, pending = wait(pending, timeout=_TICK_S, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    records[record.id] = record
                    if record.status not in UNSTARTED:
                        progress.finished(record)
        ordered = [records.get(task.id) or _unfinished(task, "not_run") for task in tasks]
        for record in ordered:
            if record.status in UNSTARTED:
                progress.finished(record)
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
    stream.write(cost_line(options.name, ordered, options.max_total_cost) + "\n")
    stream.flush()
    if ci is not None:
        ci.finish(batch_summary(options.name, ordered, code, out, options.max_total_cost))
    events.batch_completed(options.name, str(out), ordered, code)
    return code


def _plan(
    options: BatchOptions, tasks: Sequence[Task], sources: dict[str, Source]
) -> list[tuple[Task, Action, TaskRecord | None, str]]:
    plan: list[tuple[Task, Action, TaskRecord | None, str]] = []
    for task in tasks:
        digest = input_hash(task, options.exec_options, sources[task.id].base)
        previous = read_record(options.out, options.out / task.id / RECORD_FILE)
        if previous is not None:
            # Another task's record (copied or planted) is not this one's; and the file may
            # have been reordered since: the record takes the task's position now.
            previous = replace(previous, index=task.index) if previous.id == task.id else None
        plan.append((task, decide(previous, digest, retry=options.retry), previous, digest))
    return plan


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
        cost_usd=0.0,
        paths={key: f"{task.id}/{name}" for key, name in PATHS.items() if key != "stderr"},
        **run_fields(task),
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
