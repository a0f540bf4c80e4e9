"""Background shell commands (the shell tool's `background` flag, under whatever name a
manifest gives it) and the tools that read and stop them (`task_output`, `task_stop`).

A background command is a session in the run's `ProcessRegistry`, so `close_all` at the end
of the run kills it. Its output is also copied to a file the model may read with its file
tools, as upstream clients offer. Its `command_execution` item stays in progress until the
command is seen to end (by an output or stop call, or any later shell call) or is killed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from oiexec.core import rundirs
from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.redact import redact
from oiexec.tools.command import NotStarted, RunningCommand, start_command
from oiexec.tools.framework import Invocation, Runtime
from oiexec.tools.options import ShellOptions, TaskOutputOptions
from oiexec.tools.process import ProcessRegistry, ProcessSession
from oiexec.tools.results import Result, TaskReport, TaskStarted

__all__ = ["BackgroundTask", "BackgroundTasks", "reap", "start_background", "tasks_of"]

_EXTRA_KEY = "background"
_PUMP_SLICE = 0.1


@dataclass
class BackgroundTask:
    """One background command; its `RunningCommand` completes the item exactly once."""

    task_id: str
    command: str
    run: RunningCommand
    output_path: Path
    #: Opened by the runner before the pump starts (see `_open_output`); None if refused.
    output_fd: int | None = None
    pump: threading.Thread | None = None

    @property
    def session(self) -> ProcessSession:
        return self.run.session

    @property
    def finished(self) -> bool:
        return self.run.finished

    @property
    def status(self) -> str:
        if self.run.killed:
            return "killed"
        code = self.session.exit_code
        if code is None:
            return "running"
        return "completed" if code == 0 else "failed"

    def output(self) -> str:
        return redact(self.session.output_so_far())


class BackgroundTasks:
    """The background commands of one run, by task id."""

    def __init__(self, registry: ProcessRegistry) -> None:
        self._registry = registry
        self._tasks: dict[str, BackgroundTask] = {}
        self._dir: Path | None = None
        self._dir_fd = -1
        self._count = 0

    def start(
        self, ctx: ToolContext, rt: Runtime, command: str, *, cwd: Path, prefix: str
    ) -> BackgroundTask | str:
        """Start `command`; returns the task, or why it could not start."""
        argv = [rt.shell, "-c", command]
        try:
            run = start_command(ctx, self._registry, argv, cwd=cwd, env={**ctx.env, **rt.env})
        except NotStarted as exc:
            return f"{exc.message}; the command was not run." if exc.declined else exc.message
        self._count += 1
        task_id = f"{prefix}{self._count}{secrets.token_hex(3)}"
        task = BackgroundTask(task_id, command, run, self._directory() / f"{task_id}.output")
        task.output_fd = self._open_output(task.output_path.name)
        # Killed by `close_all` (end of run, or finish of the turn): complete its item then.
        run.session.on_close = lambda _s: self._finish(task, killed=True)
        task.pump = threading.Thread(
            target=_pump, args=(task,), name=f"oiexec-task-{task_id}", daemon=True
        )
        task.pump.start()
        self._tasks[task_id] = task
        return task

    def get(self, task_id: str) -> BackgroundTask | None:
        self.reap()
        return self._tasks.get(task_id)

    def running(self) -> list[BackgroundTask]:
        return [t for t in self._tasks.values() if t.status == "running"]

    def reap(self) -> None:
        """Complete the items of commands that ended since the last look."""
        for task in list(self._tasks.values()):
            if not task.finished and task.session.exit_code is not None:
                task.session.wait(0)
                self._finish(task)

    def wait(self, task: BackgroundTask, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for `task` to end; whether it has."""
        done = task.session.wait(timeout_s) is not None
        if done:
            self._finish(task)
        return done

    def stop(self, task: BackgroundTask) -> None:
        running = task.session.exit_code is None
        task.session.kill()
        self._finish(task, killed=running)

    def close(self) -> None:
        """Kill what still runs, complete every item and remove the output files."""
        for task in list(self._tasks.values()):
            if not task.finished:
                running = task.session.exit_code is None
                task.session.kill()
                self._finish(task, killed=running)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            with contextlib.suppress(OSError):
                os.close(self._dir_fd)

    def _directory(self) -> Path:
        if self._dir is None:
            self._dir = rundirs.make("oiexec-tasks-")
            # Held open: the directory sits in the shared /tmp, where a command of the same
            # user could swap it for a link; files are made through this fd, not the path.
            self._dir_fd = os.open(self._dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        return self._dir

    def _open_output(self, name: str) -> int | None:
        """Create the task's output file without following links, never reusing an entry a
        command planted (O_EXCL): a refused file only loses the copy, not the output."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(name, flags, 0o600, dir_fd=self._dir_fd)
        except OSError:
            return None

    def _finish(self, task: BackgroundTask, *, killed: bool = False) -> None:
        if task.finished:
            return
        task.run.killed = task.run.killed or killed
        if task.pump is not None:
            task.pump.join(timeout=1.0)  # the copy to the output file is complete first
        task.run.finish()


def reap(rt: Runtime) -> None:
    """Complete the items of background commands that ended (nothing before the first)."""
    tasks = rt.extras.get(_EXTRA_KEY)
    if isinstance(tasks, BackgroundTasks):
        tasks.reap()


def tasks_of(rt: Runtime) -> BackgroundTasks:
    """The run's background tasks (created on first use, closed with the runtime)."""
    tasks = rt.extras.get(_EXTRA_KEY)
    if not isinstance(tasks, BackgroundTasks):
        tasks = BackgroundTasks(rt.processes)
        rt.extras[_EXTRA_KEY] = tasks
    return tasks


def _pump(task: BackgroundTask) -> None:
    """Copy the command's output to its file as it arrives (the model may read the file)."""
    session = task.session
    if task.output_fd is None:
        return
    with contextlib.suppress(OSError), open(task.output_fd, "w", encoding="utf-8") as out:
        while True:
            chunk = session.take_output()
            if chunk:
                out.write(chunk)
                out.flush()
            if session.exit_code is not None:
                session.wait(0)
                out.write(session.take_output())
                return
            if task.finished:
                return
            time.sleep(_PUMP_SLICE)


# --- the model-facing results -----------------------------------------------------------


def start_background(inv: Invocation, command: str, cwd: Path, opts: ShellOptions) -> Result:
    """Start `command` in the background and say how to follow it, in the tool's words."""
    if opts.background_requires_description and not inv.string("description"):
        raise ToolInputError("`description` is required when running in the background.")
    tasks = tasks_of(inv.rt)
    tasks.reap()
    started = tasks.start(inv.ctx, inv.rt, command, cwd=cwd, prefix=opts.task_prefix)
    if isinstance(started, str):
        return Result(inv.rt.style.error(started), True)
    view = TaskStarted(started.task_id, started.session.pid, started.output_path)
    return Result(inv.style.background_started(view))


def _task(inv: Invocation) -> tuple[BackgroundTasks, BackgroundTask]:
    task_id = inv.string("task_id") or inv.string("shell_id")
    if not task_id:
        raise ToolInputError("`task_id` is required.")
    tasks = tasks_of(inv.rt)
    task = tasks.get(task_id)
    if task is None:
        raise ToolInputError(f"No background task found with ID: {task_id}")
    return tasks, task


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} earlier characters omitted ...]\n{text[-limit:]}"


def task_output(inv: Invocation) -> Result:
    tasks, task = _task(inv)
    opts = inv.opts(TaskOutputOptions)
    raw = inv.integer("timeout", opts.default_timeout)
    seconds = max(0.0, (raw or 0) / 1000 if opts.timeout_unit == "ms" else float(raw or 0))
    remaining = inv.ctx.remaining()
    if remaining is not None:
        seconds = min(seconds, remaining)
    done = task.status != "running"
    if not done and inv.boolean("block", default=True):
        done = tasks.wait(task, min(seconds, float(opts.max_wait_s)))
    tasks.reap()
    output = _tail(task.output(), opts.max_output_chars)
    report = TaskReport(task.task_id, task.status, task.session.exit_code, output, done)
    return Result(inv.style.task_report(report))


def task_stop(inv: Invocation) -> Result:
    if inv.boolean("all"):
        tasks = tasks_of(inv.rt)
        running = tasks.running()
        for task in running:
            tasks.stop(task)
        return Result(f"Stopped {len(running)} background task(s).")
    tasks, task = _task(inv)
    if task.status != "running":
        message = f"Task {task.task_id} is not running (status: {task.status})"
        return Result(inv.rt.style.error(message), True)
    tasks.stop(task)
    return Result(inv.style.task_stopped(task.task_id, task.command))
