"""Background shell commands (Claude Code's and Kimi's `run_in_background`, qwen-code's
`is_background`, DeepSeek TUI's `background`) and the tools that read and stop them
(`TaskOutput`/`TaskStop`, `task_stop`, `exec_shell_wait`/`exec_shell_cancel`).

A background command is a session in the run's `ProcessRegistry`, so `close_all` at the end
of the run kills it. Its output is also copied to a file the model may read with its file
tools, as upstream clients offer. Its `command_execution` item stays in progress until the
command is seen to end (by an output or stop call, or any later shell call) or is killed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.errors import SandboxUnavailable, ToolInputError
from oiexec.core.events import CommandExecutionItem, CommandStatus
from oiexec.core.policy import PreparedCommand
from oiexec.core.redact import redact
from oiexec.tools.adapters.base import Invocation, Result, Runtime, error_text, register
from oiexec.tools.process import ProcessRegistry, ProcessSession

__all__ = ["BackgroundTask", "BackgroundTasks", "start_background", "tasks_of"]

_EXTRA_KEY = "background"
_PUMP_SLICE = 0.1


@dataclass
class BackgroundTask:
    """One background command and its item, finished exactly once."""

    task_id: str
    command: str
    shown: str
    item_id: str
    session_id: int
    session: ProcessSession
    prepared: PreparedCommand
    items: ItemEmitter
    output_path: Path
    #: Opened by the runner before the pump starts (see `_open_output`); None if refused.
    output_fd: int | None = None
    finished: bool = False
    killed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    pump: threading.Thread | None = None

    @property
    def status(self) -> str:
        if self.killed:
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
        shown = shlex.join(argv)
        try:
            prepared = ctx.sandbox.prepare(argv, cwd=cwd, env={**ctx.env, **rt.env})
        except SandboxUnavailable as exc:
            reason = exc.render()
            _complete(ctx.items, ctx.items.next_id(), shown, reason, None, "declined")
            return f"{reason}; the command was not run."
        item_id = ctx.items.next_id()
        ctx.items.started(CommandExecutionItem(id=item_id, command=shown))
        try:
            session_id, session = self._registry.spawn(prepared)
        except OSError as exc:
            _after(prepared)
            _complete(ctx.items, item_id, shown, str(exc), None, "failed")
            return f"failed to start the command: {exc}"
        self._count += 1
        task_id = f"{prefix}{self._count}{secrets.token_hex(3)}"
        task = BackgroundTask(
            task_id=task_id,
            command=command,
            shown=shown,
            item_id=item_id,
            session_id=session_id,
            session=session,
            prepared=prepared,
            items=ctx.items,
            output_path=self._directory() / f"{task_id}.output",
        )
        task.output_fd = self._open_output(task.output_path.name)
        # Killed by `close_all` (end of run, or finish of the turn): complete its item then.
        session.on_close = lambda _s: self._finish(task, killed=True)
        task.pump = threading.Thread(
            target=_pump, args=(task,), name=f"oiexec-task-{task_id}", daemon=True
        )
        task.pump.start()
        self._tasks[task_id] = task
        return task

    def get(self, task_id: str) -> BackgroundTask | None:
        self.sweep()
        return self._tasks.get(task_id)

    def running(self) -> list[BackgroundTask]:
        return [t for t in self._tasks.values() if t.status == "running"]

    def sweep(self) -> None:
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
        task.killed = task.session.exit_code is None
        task.session.kill()
        self._finish(task, killed=task.killed)

    def close(self) -> None:
        """Kill what still runs, complete every item and remove the output files."""
        for task in list(self._tasks.values()):
            if not task.finished:
                task.killed = task.session.exit_code is None
                task.session.kill()
                self._finish(task, killed=task.killed)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            with contextlib.suppress(OSError):
                os.close(self._dir_fd)

    def _directory(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="oiexec-tasks-"))
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
        with task.lock:
            if task.finished:
                return
            task.finished = True
        task.killed = task.killed or killed
        if task.pump is not None:
            task.pump.join(timeout=1.0)
        notes = _after(task.prepared)
        code = task.session.exit_code
        output = task.output()
        if notes:
            output = "\n".join([output.rstrip("\n"), *notes]).lstrip("\n")
        status: CommandStatus = "completed" if code == 0 and not task.killed else "failed"
        _complete(task.items, task.item_id, task.shown, output, code, status)
        self._registry.release(task.session_id)


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


def _complete(
    items: ItemEmitter,
    item_id: str,
    command: str,
    output: str,
    code: int | None,
    status: CommandStatus,
) -> None:
    items.completed(
        CommandExecutionItem(
            id=item_id, command=command, aggregated_output=output, exit_code=code, status=status
        )
    )


def _after(prepared: PreparedCommand) -> list[str]:
    try:
        return list(prepared.after())
    except Exception as exc:  # a broken post-command check must not lose the result
        return [f"post-command sandbox check failed: {exc}"]


# --- the model-facing results -----------------------------------------------------------


def start_background(inv: Invocation, command: str, cwd: Path) -> Result:
    """Start `command` in the background and say how to follow it, in the harness's words."""
    if inv.option("background_requires_description") and not inv.string("description"):
        raise ToolInputError("`description` is required when running in the background.")
    tasks = tasks_of(inv.rt)
    tasks.sweep()
    started = tasks.start(
        inv.ctx, inv.rt, command, cwd=cwd, prefix=str(inv.option("task_prefix", "bg_"))
    )
    if isinstance(started, str):
        return Result(error_text(inv.rt.style, started), True)
    task, path, pid = started.task_id, started.output_path, started.session.pid
    style = inv.render
    if style == "claude":
        text = f"Command running in background with ID: {task}. Output is being written to: {path}"
    elif style in ("kimi-code", "kimi-cli"):
        text = (
            f"<system>Command started in the background.</system>\ntask_id: {task}\n"
            f"output_file: {path}\nUse TaskOutput to read its output and TaskStop to stop it."
        )
    elif style == "qwen":
        text = (
            f"Command is running in the background.\ntask_id: {task}\nBackground PIDs: {pid}\n"
            f"Output file: {path}\nStop it with task_stop."
        )
    elif style == "deepseek":
        text = (
            f"Started background task {task} (pid {pid}).\nOutput file: {path}\n"
            "Use exec_shell_wait to read its output and exec_shell_cancel to stop it."
        )
    else:
        text = f"Started background task {task} (pid {pid}); output file: {path}"
    return Result(text)


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


@register("task_output")
def task_output(inv: Invocation) -> Result:
    tasks, task = _task(inv)
    unit = inv.option("timeout_unit", "ms")
    raw = inv.integer("timeout", int(inv.option("default_timeout", 30_000)))
    seconds = max(0.0, (raw or 0) / 1000 if unit == "ms" else float(raw or 0))
    remaining = inv.ctx.remaining()
    if remaining is not None:
        seconds = min(seconds, remaining)
    done = task.status != "running"
    if not done and inv.boolean("block", default=True):
        done = tasks.wait(task, min(seconds, float(inv.option("max_wait_s", 600))))
    tasks.sweep()
    output = _tail(task.output(), int(inv.option("max_output_chars", 30_000)))
    code = task.session.exit_code
    style = inv.render
    if style == "claude":
        lines = [
            f"<retrieval_status>{'success' if done else 'timeout'}</retrieval_status>",
            f"<task_id>{task.task_id}</task_id>",
            "<task_type>local_bash</task_type>",
            f"<status>{task.status}</status>",
        ]
        if code is not None:
            lines.append(f"<exit_code>{code}</exit_code>")
        lines.append(f"<output>\n{output.rstrip()}\n</output>")
        return Result("\n".join(lines))
    tail = "" if code is None else f", exit code {code}"
    if style in ("kimi-code", "kimi-cli"):
        head = f"<system>Task {task.task_id} is {task.status}{tail}.</system>"
        return Result("\n".join(p for p in (head, output.rstrip("\n")) if p))
    if style == "deepseek":
        state = f"Task {task.task_id}: {task.status}" + (
            "" if code is None else f" (exit code: {code})"
        )
        return Result(f"{state}\nSTDOUT:\n{output.rstrip()}\nSTDERR:\n")
    return Result(f"Task {task.task_id}: {task.status}{tail}\n{output}")


@register("task_stop")
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
        return Result(error_text(inv.rt.style, message), True)
    tasks.stop(task)
    style = inv.render
    if style == "claude":
        return Result(f"Successfully stopped task: {task.task_id} ({task.command})")
    if style in ("kimi-code", "kimi-cli"):
        return Result(f"<system>Task {task.task_id} stopped.</system>")
    return Result(f"Stopped background task {task.task_id}.")
