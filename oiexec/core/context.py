"""What a tool gets to do its work, and how it reports items to the event stream."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.core.events import ItemCompleted, ItemStarted, ItemUpdated, ThreadEvent, ThreadItem
from oiexec.core.redact import redact_value

if TYPE_CHECKING:
    from oiexec.core.protocols import Sandbox


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

    def remaining(self) -> float | None:
        """Seconds left before the run's `--timeout`, or None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def resolve(self, path: str) -> Path:
        """A model-given path, relative to the working directory unless absolute."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.cwd / candidate
