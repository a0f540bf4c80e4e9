"""The command runner: every model-run command goes through the sandbox and is reported as one
`command_execution` item, started once and completed exactly once.

The lifecycle: the run's command rules (a refusal is a `declined` item, nothing runs, and
the model reads the rule's justification as the call's error), prepare through the sandbox
(a refusal is a `declined` item and nothing runs),
item started, spawn (a failure is a `failed` item), wait bounded by the call's timeout and the
run's deadline, the sandbox's `after()` checks (whose failure is a note, never a lost
result), the launcher's own failure told apart from the command's, item completed. A command
that outlives its call (an `exec_command` session, a background task) completes its item when
it is seen to exit or when the registry kills it at the end of the run.

Long-lived sessions that run many commands (the persistent shell, interpreter runtimes) use
`launch`/`stop` for their process and a `CommandItem` per command.
"""

from __future__ import annotations

import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path

from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.errors import SandboxUnavailable, ToolInputError
from oiexec.core.events import CommandExecutionItem, CommandStatus
from oiexec.core.policy import PreparedCommand
from oiexec.core.redact import redact
from oiexec.tools.process import ProcessRegistry, ProcessSession

__all__ = [
    "CommandItem",
    "Declined",
    "NotStarted",
    "RunningCommand",
    "after_notes",
    "deadline_bound",
    "launch",
    "refuse_by_rules",
    "setup_failed",
    "start_command",
    "stop",
]


class Declined(Exception):
    """The sandbox refused to run the command; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotStarted(Exception):
    """The command never ran (declined, or it could not be spawned); its item is already
    completed. `message` is for the model, `notes` are the sandbox's."""

    def __init__(self, message: str, *, declined: bool, notes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.declined = declined
        self.notes = notes


def after_notes(prepared: PreparedCommand) -> list[str]:
    """The sandbox's post-command notes; a broken check must not lose the result."""
    try:
        return list(prepared.after())
    except Exception as exc:
        return [f"post-command sandbox check failed: {exc}"]


def setup_failed(prepared: PreparedCommand, code: int | None) -> bool:
    """Whether `code` is the sandbox launcher failing, not the command."""
    return code is not None and code == prepared.setup_failure_exit_code


def deadline_bound(ctx: ToolContext, seconds: float) -> tuple[float, bool]:
    """How long a wait of `seconds` may last, and whether the run's deadline cut it short."""
    remaining = ctx.remaining()
    if remaining is not None and remaining <= seconds:
        return max(0.0, remaining), True
    return seconds, False


def refuse_by_rules(ctx: ToolContext, argv: list[str], shown: str) -> None:
    """Before a model's command starts: when the run's command rules refuse `argv`, report
    it as a `declined` item (shown as `shown`) and raise the refusal the model reads."""
    rules = ctx.command_rules
    refusal = rules.refusal(argv) if rules is not None else None
    if refusal is None:
        return
    CommandItem.declined(ctx.items, shown, refusal)
    raise ToolInputError(refusal, kind="denied")


def _prepare(ctx: ToolContext, argv: list[str], cwd: Path, env: dict[str, str]) -> PreparedCommand:
    try:
        return ctx.sandbox.prepare(argv, cwd=cwd, env=env)
    except SandboxUnavailable as exc:
        reason = exc.render()
        if not reason.lower().startswith("sandbox unavailable"):
            reason = f"sandbox unavailable: {reason}"
        raise Declined(reason) from exc


@dataclass
class CommandItem:
    """One command's `command_execution` item."""

    items: ItemEmitter
    id: str
    command: str
    done: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, items: ItemEmitter, command: str) -> CommandItem:
        item = cls(items, items.next_id(), command)
        items.started(CommandExecutionItem(id=item.id, command=command))
        return item

    @staticmethod
    def declined(items: ItemEmitter, command: str, reason: str) -> None:
        """A command the sandbox refused: its only event, completed as `declined`."""
        items.completed(
            CommandExecutionItem(
                id=items.next_id(), command=command, aggregated_output=reason, status="declined"
            )
        )

    def claim(self) -> bool:
        """True exactly once: for whoever completes the item."""
        with self._lock:
            if self.done:
                return False
            self.done = True
            return True

    def complete(self, output: str, exit_code: int | None, status: CommandStatus) -> None:
        """Complete the item; later calls do nothing."""
        if self.claim():
            self.emit(output, exit_code, status)

    def emit(self, output: str, exit_code: int | None, status: CommandStatus) -> None:
        """Complete the item; only for the caller `claim` returned True to."""
        self.items.completed(
            CommandExecutionItem(
                id=self.id,
                command=self.command,
                aggregated_output=output,
                exit_code=exit_code,
                status=status,
            )
        )


@dataclass
class RunningCommand:
    """A spawned command with its item; `finish` completes the item exactly once."""

    item: CommandItem
    prepared: PreparedCommand
    session_id: int
    session: ProcessSession
    registry: ProcessRegistry
    #: Killed on purpose (stopped, timed out): the item fails whatever the exit status.
    killed: bool = False

    @property
    def finished(self) -> bool:
        return self.item.done

    def finish(self) -> list[str]:
        """Complete the item of an exited (or killed) command and release its session;
        returns the sandbox's notes (none when it was finished already)."""
        if not self.item.claim():
            return []
        notes = after_notes(self.prepared)
        code = self.session.exit_code
        output = redact(self.session.output_so_far())
        if setup_failed(self.prepared, code):
            output = f"sandbox setup failed (launcher exit status {code})\n{output}"
        if notes:
            output = "\n".join([output.rstrip("\n"), *notes]).lstrip("\n")
        ok = code == 0 and not self.killed
        self.item.emit(output, code, "completed" if ok else "failed")
        self.registry.release(self.session_id)
        return notes


def start_command(
    ctx: ToolContext,
    registry: ProcessRegistry,
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    tty: bool = False,
    rules: bool = True,
) -> RunningCommand:
    """Prepare, report and spawn `argv`; raises `NotStarted` (item already completed), or
    `ToolInputError` when a command rule refuses it (`refuse_by_rules`; `rules=False`
    for a command the user gave, such as `--check`'s, which no rule judges).

    The session's `on_close` finishes the item, so a command the registry kills at the end
    of the run is reported too.
    """
    shown = shlex.join(argv)
    if rules:
        refuse_by_rules(ctx, argv, shown)
    try:
        prepared = _prepare(ctx, argv, cwd, env)
    except Declined as exc:
        CommandItem.declined(ctx.items, shown, exc.reason)
        raise NotStarted(exc.reason, declined=True) from exc
    item = CommandItem.start(ctx.items, shown)
    try:
        session_id, session = registry.spawn(prepared, tty=tty)
    except OSError as exc:
        notes = tuple(after_notes(prepared))
        item.complete(str(exc), None, "failed")
        message = f"failed to start the command: {exc}"
        raise NotStarted(message, declined=False, notes=notes) from exc
    running = RunningCommand(item, prepared, session_id, session, registry)
    session.owner = running
    session.on_close = lambda _s: running.finish()
    return running


def launch(
    ctx: ToolContext, argv: list[str], *, env: dict[str, str]
) -> tuple[ProcessSession, PreparedCommand]:
    """Start a long-lived session process in the run's directory (no item: its commands
    have theirs). Raises `Declined`, or `OSError` after the sandbox's checks ran."""
    prepared = _prepare(ctx, argv, ctx.cwd, env)
    try:
        return ProcessSession(prepared), prepared
    except OSError:
        after_notes(prepared)
        raise


def stop(session: ProcessSession, prepared: PreparedCommand) -> list[str]:
    """Kill a long-lived session's process group; returns the sandbox's notes."""
    session.close()
    return after_notes(prepared)
