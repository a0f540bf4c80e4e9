"""What a tool gets to do its work, and how it reports items to the event stream."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from oiexec.core.events import ItemCompleted, ItemStarted, ItemUpdated, ThreadEvent, ThreadItem
from oiexec.core.redact import redact_value

if TYPE_CHECKING:
    from oiexec.core.policy import Sandbox


class ItemEmitter:
    """Hands out `item_N` ids (restarting at 0 each invocation, as Codex does) and emits the
    lifecycle events of items.

    Every item is redacted here, once, before any sink sees it: model text (messages,
    reasoning, plans) may echo a secret it saw, and the JSONL stream, the transcript, the
    session, the run log and the reports all take their items from this one place."""

    def __init__(self, emit: Callable[[ThreadEvent], None]) -> None:
        self._emit = emit
        self._next = 0

    def next_id(self) -> str:
        item_id = f"item_{self._next}"
        self._next += 1
        return item_id

    def started(self, item: ThreadItem) -> None:
        self._emit(ItemStarted(item=redact_value(item)))

    def updated(self, item: ThreadItem) -> None:
        self._emit(ItemUpdated(item=redact_value(item)))

    def completed(self, item: ThreadItem) -> None:
        self._emit(ItemCompleted(item=redact_value(item)))


class WriteRefusals:
    """How many writes the read-only sandbox refused during one run: the file tools' refused
    edits, counted as they happen (`oiexec.tools.refusals`). The run adds the commands that
    failed on a read-only file system and says at its end that nothing was changed, and why."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # tools may run on several threads
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def note(self) -> None:
        with self._lock:
            self._count += 1


class CommandRules(Protocol):
    """The run's command rules (`.rules` files, oiexec/tools/rules): why a command may not
    start, as text for the model, or None when it may."""

    def refusal(self, argv: Sequence[str]) -> str | None: ...


@dataclass
class ToolContext:
    """Per-run state shared by every tool call.

    `env` is the environment commands get, already filtered by `[shell_environment_policy]`.
    `cleanup` runs when the run ends however it ends (tools register process-group kills).
    """

    cwd: Path
    sandbox: Sandbox
    items: ItemEmitter
    env: dict[str, str]
    warn: Callable[[str], None]
    deadline: float | None = None
    cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    #: Writes the read-only sandbox refused this run (see `WriteRefusals`).
    refused_writes: WriteRefusals = field(default_factory=WriteRefusals)
    #: What the command rules forbid; None: no rules (none found, or `--ignore-rules`).
    command_rules: CommandRules | None = None

    def remaining(self) -> float | None:
        """Seconds left before the run's `--timeout`, or None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def resolve(self, path: str) -> Path:
        """A model-given path, relative to the working directory unless absolute."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.cwd / candidate
