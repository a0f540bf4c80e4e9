"""The run log: one JSON line per notable event in `$OPENINTERPRETER_HOME/logs/`.

It is for operators after the fact (why did last night's job fail, how often does the
provider retry), so it records decisions and outcomes, never prompts or command output, and
every value passes through `redact`.

Written here, a dict and `json.dumps` per line, not through a logging library: structlog (used
until issue 25) imports its console renderer, asyncio and pickle with its package, about 50
modules on every run, for what is four lines of code here.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from oiexec.core.events import (
    CommandExecutionItem,
    ItemCompleted,
    StreamError,
    ThreadEvent,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
)
from oiexec.core.redact import redact


class RunLogSink:
    """An EventSink that writes a few events to the day's log file."""

    def __init__(self, home: Path, **context: Any) -> None:
        directory = home / "logs"
        directory.mkdir(parents=True, exist_ok=True)
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        self._file: IO[str] = (directory / f"oiexec-{day}.log").open("a", encoding="utf-8")
        #: Fields every line carries (the run's model, provider, sandbox; then its thread).
        self._context: dict[str, Any] = dict(context)
        self._relay = _ProviderRelay(self.note)
        self._relay.install()

    def note(self, event: str, **fields: Any) -> None:
        """One line: the run's fields, these, the event's name and a UTC timestamp, keys
        sorted, every string redacted; flushed, so a run that is killed keeps what it wrote."""
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        line = {**self._context, **fields, "event": event, "timestamp": stamp}
        line = {k: redact(v) if isinstance(v, str) else v for k, v in line.items()}
        self._file.write(json.dumps(line, sort_keys=True, default=repr) + "\n")
        self._file.flush()

    def exception(self, event: str, exc: BaseException) -> None:
        import traceback

        self.note(event, traceback="".join(traceback.format_exception(exc)))

    def emit(self, event: ThreadEvent) -> None:
        match event:
            case ThreadStarted(thread_id=thread_id):
                self._context["thread_id"] = thread_id
                self.note("run.started")
            case StreamError(message=message):
                self.note("provider.retry", message=message)
            case ItemCompleted(item=CommandExecutionItem() as item):
                self.note(
                    "command.finished", command=item.command, exit_code=item.exit_code,
                    status=item.status,
                )  # fmt: skip
            case TurnCompleted(usage=usage, cost_usd=cost, session_cost_usd=session_cost):
                self.note(
                    "run.completed", **usage.model_dump(), cost_usd=cost,
                    session_cost_usd=session_cost,
                )  # fmt: skip
            case TurnFailed(error=error):
                self.note("run.failed", message=error.message)
            case _:
                pass

    def close(self) -> None:
        self._relay.remove()
        self._file.close()


#: Where the provider wires record at debug level what the server sent that they could not
#: use (an event of the wrong shape, redacted and cut): `providers.events.base.LOGGER_NAME`.
_PROVIDER_LOGGER = "oiexec.providers"


class _ProviderRelay(logging.Handler):
    """The wires' debug records into the run log as `provider.debug` (an operator reading why
    a run failed sees the raw event); unrelayed, nothing records them and nothing prints."""

    def __init__(self, note: Callable[..., None]) -> None:
        super().__init__(level=logging.DEBUG)
        self._note = note

    def install(self) -> None:
        logger = logging.getLogger(_PROVIDER_LOGGER)
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # the run log has it; the terminal must not

    def remove(self) -> None:
        logging.getLogger(_PROVIDER_LOGGER).removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a log line must never end a run
            self._note(
                "provider.debug", level=record.levelname.lower(), message=record.getMessage()
            )
