"""The script a model server plays (a queue of steps, plus per-conversation routes for
concurrent clients) and the log of every request it received. Thread-safe: the HTTP server
answers each connection on its own thread."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.support.model_server.steps import Step
from tests.support.model_server.wires import Wire


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    #: `time.monotonic()` when the request was read: a test times a fault from the first
    #: model request, leaving out the client's own start-up.
    received: float = field(default_factory=time.monotonic)

    @property
    def wire(self) -> Wire | None:
        if self.method != "POST":
            return None
        if self.path.endswith("/chat/completions"):
            return "chat"
        if self.path.endswith("/responses"):
            return "responses"
        if self.path.endswith("/messages"):
            return "messages"
        return None


class ScriptedModel:
    """A queue of steps and the log of every request. Thread-safe."""

    def __init__(self, *steps: Step) -> None:
        self._lock = threading.Lock()
        self._steps: deque[Step] = deque(steps)
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._served = 0
        self._ids = itertools.count(1)
        #: Per-conversation scripts for concurrent clients (batch tasks): marker -> steps.
        self._routes: dict[str, deque[Step]] = {}
        #: Seconds every model request waits before it is answered (benchmarks).
        self.delay_s = 0.0

    def enqueue(self, *steps: Step) -> ScriptedModel:
        with self._lock:
            self._steps.extend(steps)
        return self

    def clear(self) -> int:
        """Drop the steps still queued (one script after another on a shared server); how
        many there were."""
        with self._lock:
            left = len(self._steps)
            self._steps.clear()
            return left

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, GETs included."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Only the model calls (`POST …/responses`, `…/chat/completions`, `…/messages`)."""
        return [r for r in self.requests if r.wire is not None]

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.model_requests]

    @property
    def errors(self) -> list[str]:
        """Problems the server answered with 500 (script exhausted, a step that raised)."""
        with self._lock:
            return list(self._errors)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def route(self, marker: str, *steps: Step) -> ScriptedModel:
        """Script one conversation of several that run at once: a request whose body contains
        `marker` (put it in that task's prompt) takes its steps from this queue, whatever
        order the concurrent requests arrive in."""
        with self._lock:
            self._routes.setdefault(marker, deque()).extend(steps)
        return self

    def routed_remaining(self, marker: str) -> int:
        with self._lock:
            return len(self._routes.get(marker, ()))

    def take(self, request: RecordedRequest) -> Step | str:
        """The next step, or an error message when there is none."""
        text = json.dumps(request.body) if self._routes else ""
        with self._lock:
            self._served += 1
            for marker, queue in self._routes.items():
                if marker in text:
                    if queue:
                        return queue.popleft()
                    message = f"ScriptedModel: no scripted step left for route {marker!r}"
                    self._errors.append(message)
                    return message
            if self._steps:
                return self._steps.popleft()
            message = (
                f"ScriptedModel: no scripted step left for model request #{self._served} "
                f"({request.method} {request.path}); the test scripted {self._served - 1}. "
                "Enqueue more steps or check why the client asked again."
            )
            self._errors.append(message)
            return message

    def note_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)
