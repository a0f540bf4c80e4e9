"""Fans every event out to the sinks chosen for this run."""

from __future__ import annotations

from collections.abc import Sequence

from oiexec.core.events import ThreadEvent
from oiexec.core.protocols import EventSink


class Dispatcher:
    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self._sinks = list(sinks)

    def emit(self, event: ThreadEvent) -> None:
        for sink in self._sinks:
            sink.emit(event)

    def close(self) -> None:
        for sink in self._sinks:
            sink.close()
