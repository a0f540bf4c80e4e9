"""The run log: one JSON line per notable event in `$OPENINTERPRETER_HOME/logs/`.

It is for operators after the fact (why did last night's job fail, how often does the
provider retry), so it records decisions and outcomes, never prompts or command output, and
every value passes through `redact`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Mapping, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
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


def _structlog() -> ModuleType:
    """structlog, imported without rich. Its package always imports its console renderer and
    tracebacks modules, which import rich (a large tree) when it is installed, for coloured
    tracebacks on a terminal; the run log renders JSON to a file and never uses them. Hidden
    only while structlog is first imported, and only when rich is not already loaded."""
    if "structlog" in sys.modules:
        return sys.modules["structlog"]
    hide = "rich" not in sys.modules
    if hide:
        sys.modules["rich"] = None  # type: ignore[assignment]
    try:
        import structlog
    finally:
        if hide:
            del sys.modules["rich"]
    return structlog


def _redact_values(
    _logger: object, _name: str, event: MutableMapping[str, Any]
) -> Mapping[str, Any]:
    return {key: redact(value) if isinstance(value, str) else value for key, value in event.items()}


class RunLogSink:
    """An EventSink that writes a few events to the day's log file."""

    def __init__(self, home: Path, **context: Any) -> None:
        structlog = _structlog()
        directory = home / "logs"
        directory.mkdir(parents=True, exist_ok=True)
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        self._file: IO[str] = (directory / f"oiexec-{day}.log").open("a", encoding="utf-8")
        self._log = structlog.wrap_logger(
            structlog.WriteLogger(self._file),
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                _redact_values,
                structlog.processors.JSONRenderer(sort_keys=True),
            ],
        ).bind(**context)
        self._relay = _ProviderRelay(self.note)
        self._relay.install()

    def note(self, event: str, **fields: Any) -> None:
        self._log.info(event, **fields)

    def exception(self, event: str, exc: BaseException) -> None:
        import traceback

        self._log.error(event, traceback="".join(traceback.format_exception(exc)))

    def emit(self, event: ThreadEvent) -> None:
        match event:
            case ThreadStarted(thread_id=thread_id):
                self._log = self._log.bind(thread_id=thread_id)
                self._log.info("run.started")
            case StreamError(message=message):
                self._log.warning("provider.retry", message=message)
            case ItemCompleted(item=CommandExecutionItem() as item):
                self._log.info(
                    "command.finished", command=item.command, exit_code=item.exit_code,
                    status=item.status,
                )  # fmt: skip
            case TurnCompleted(usage=usage):
                self._log.info("run.completed", **usage.model_dump())
            case TurnFailed(error=error):
                self._log.error("run.failed", message=error.message)
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
