"""The provider faults a CI run must survive, one definition shared by the fault-matrix tests
(tests/providers/test_fault_matrix.py) and the fault table (bench/fault_table.py): what the
scripted server sends on each wire, the exit code a run must end with, how long the fault
itself may take, and what the run's message must name.

Every run uses the same small budgets (`SETTINGS`): a 400 ms idle limit and one retry of
each kind, so an idle fault may take `IDLE × (retries + 1)` and everything else next to
nothing beyond the runner's own start-up.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import (
    ModelServer,
    Step,
    Wire,
    chat_events,
    drip,
    drop_after,
    failed,
    fault,
    hang,
    interim,
    keepalive,
    messages_events,
    raw_body,
    raw_events,
    reply,
    responses_events,
    stall,
)

KEY = "sk-faults-SECRET-0123456789abcdef"
KEY_VAR = "FAULTS_API_KEY"
IDLE_MS = 400
IDLE = IDLE_MS / 1000
RETRIES = 1
SETTINGS: Mapping[str, Any] = {
    "env_key": KEY_VAR,
    "stream_idle_timeout_ms": IDLE_MS,
    "request_max_retries": RETRIES,
    "stream_max_retries": RETRIES,
}
WIRES: tuple[Wire, ...] = ("responses", "chat", "messages")
#: What an idle limit running out says, after the headers and before them.
_LIMIT = f"{IDLE:g}s, stream_idle_timeout_ms = {IDLE_MS}"
IDLE_SSE = f"idle timeout waiting for SSE (no event for {_LIMIT})"
IDLE_HEADERS = f"timed out waiting for the response (no response headers for {_LIMIT})"
#: The time every attempt may use up when the idle limit ends it.
IDLE_BOUND = IDLE * (RETRIES + 1)
#: The answer a run that recovers ends with.
RECOVERED = "recovered after the fault"


@dataclass(frozen=True)
class FaultCase:
    """One fault: `steps(wire)` is what the server answers the run's requests with."""

    name: str
    steps: Callable[[Wire], Sequence[Step]]
    #: The exit code the run must end with (0: it recovered, answering `RECOVERED`).
    exit_code: int
    #: Seconds the fault itself may cost the run, on top of a clean run's time.
    bound: float
    #: Text the `turn.failed` message (or, for a recovered run, the retry notice) contains.
    says: Callable[[Wire], str]
    wires: tuple[Wire, ...] = WIRES

    def applies(self, wire: Wire) -> bool:
        return wire in self.wires


@dataclass(frozen=True)
class FaultRun:
    result: CliResult
    #: The whole run, start-up included.
    seconds: float
    #: From the run's first model request to its exit: what the fault cost, without the
    #: start-up a loaded machine stretches (the whole run if it never asked the model).
    fault_seconds: float
    #: How many model requests the run made.
    requests: int

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.result.events

    @property
    def failure(self) -> str:
        """The `turn.failed` message ('' if the run did not end with one)."""
        last = self.events[-1] if self.events else {}
        if last.get("type") != "turn.failed":
            return ""
        return str(last.get("error", {}).get("message", ""))

    @property
    def notices(self) -> list[str]:
        """The retry notices (`error` events): `Reconnecting... n/N (reason)`."""
        return [e["message"] for e in self.events if e["type"] == "error"]

    @property
    def messages(self) -> list[str]:
        return [i["text"] for i in self.result.items("agent_message")]

    def says(self, text: str) -> bool:
        return text in (self.failure if self.result.returncode else " ".join(self.notices))


def run_fault(
    server: ModelServer, repo: Path, wire: Wire, *steps: Step, timeout: float = 60, **provider: Any
) -> FaultRun:
    """`exec --json` against the scripted provider with `SETTINGS` (the key in $KEY_VAR),
    timed from the start of the subprocess to its end."""
    server.enqueue(*steps)
    args = exec_args(server, wire=wire, **{**SETTINGS, **provider})
    before = len(server.model_requests)
    started = time.monotonic()
    result = run_cli([*args, "fix it"], cwd=repo, env={KEY_VAR: KEY}, timeout=timeout)
    ended = time.monotonic()
    mine = server.model_requests[before:]
    first = mine[0].received if mine else started
    return FaultRun(result, ended - started, ended - first, len(mine))


def key_leaks(run: FaultRun, *folders: Path) -> list[str]:
    """Where the key shows unmasked: stdout, stderr, or any file under `folders`."""
    found = [name for name in ("stdout", "stderr") if KEY in getattr(run.result, name)]
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and ".git" not in path.parts and KEY.encode() in path.read_bytes():
                found.append(str(path))
    return found


# -- the events of a partial answer, cut where each wire's error arrives ------------------------

_ids = itertools.count(10_000)


def _next_id() -> int:
    return next(_ids)


def partial_then(wire: Wire, error: Mapping[str, Any]) -> Step:
    """An answer that has begun (a finished message item on Responses, text deltas on Chat
    and Messages), then `error` as the wire sends it mid-stream."""
    text = reply("a partial answer that must not be kept")
    if wire == "responses":
        events: list[Any] = responses_events(text, model="m", ids=_next_id)[:-1]
    elif wire == "chat":
        events = chat_events(text, model="m", ids=_next_id)[:3]
    else:
        events = messages_events(text, model="m", ids=_next_id)[:5]
    return raw_events(*events, dict(error))


def stream_error(wire: Wire, code: str, message: str) -> dict[str, Any]:
    """An error event inside a 200 stream, in `wire`'s words."""
    if wire == "responses":
        return {"type": "error", "code": code, "message": message, "param": None}
    if wire == "chat":
        return {"error": {"message": message, "type": code, "code": code}}
    return {"type": "error", "error": {"type": code, "message": message}}


def wrong_shape(wire: Wire) -> Step:
    """Well-formed JSON the wire cannot use: an output item that is a string (Responses), a
    choice whose delta is a string (Chat), a content block without a type (Messages)."""
    if wire == "responses":
        created = {"type": "response.created", "response": {"id": "resp_x", "output": []}}
        item = {"type": "response.output_item.done", "output_index": 0, "item": "just a string"}
        return raw_events(created, item)
    if wire == "chat":
        return raw_events({"id": "c", "choices": [{"index": 0, "delta": "just a string"}]})
    start = messages_events(reply("x"), model="m", ids=_next_id)[0]
    block = {"type": "content_block_start", "index": 0, "content_block": {"text": "no type"}}
    return raw_events(start, block)


def choices_null(wire: Wire) -> Step:
    """A Chat stream with a `choices: null` chunk (some servers' usage chunk) in it."""
    events: list[Any] = chat_events(reply(RECOVERED), model="m", ids=_next_id)
    return raw_events(events[0], {"id": "c", "choices": None}, *events[1:])


_WRONG_SHAPE_PATH = {
    "responses": "response.output_item.done: item",
    "chat": "chat.completion.chunk: choices[0].delta",
    "messages": "content_block_start: content_block.type",
}


def _twice(step: Step) -> Callable[[Wire], Sequence[Step]]:
    """The fault on the first attempt and on its one retry: the run must give up."""
    return lambda wire: [step] * (RETRIES + 1)


def _twice_per_wire(make: Callable[[Wire], Step]) -> Callable[[Wire], Sequence[Step]]:
    return lambda wire: [make(wire)] * (RETRIES + 1)


def _then_recover(step: Callable[[Wire], Step]) -> Callable[[Wire], Sequence[Step]]:
    return lambda wire: [step(wire), reply(RECOVERED)]


def _say(text: str) -> Callable[[Wire], str]:
    return lambda wire: text


def _statuses() -> list[FaultCase]:
    refused = "unexpected status"
    check_key = f"Check the API key in ${KEY_VAR}"
    cases = [
        FaultCase("HTTP 401", lambda w: [fault(401)], 1, 0, _say(check_key)),
        FaultCase("HTTP 403", lambda w: [fault(403)], 1, 0, _say(check_key)),
        FaultCase("HTTP 404", lambda w: [fault(404)], 1, 0, _say("Check the model name (-m)")),
        # Too long for the window: the loop may compact and ask again; it cannot succeed.
        FaultCase(
            "HTTP 413",
            lambda w: [fault(413, message="Request Entity Too Large")] * 6,
            1,
            0,
            _say("context window"),
        ),
        FaultCase(
            "HTTP 429 twice",
            lambda w: [fault(429, retry_after=0, message="Rate limit reached")] * 2,
            1,
            0,
            _say(f"{refused} 429"),
        ),
    ]
    for status in (500, 502, 503, 529):
        cases.append(
            FaultCase(
                f"HTTP {status} twice", _twice(fault(status)), 1, 0, _say(f"{refused} {status}")
            )
        )
    cases.append(
        FaultCase(
            "HTTP 503 then answer",
            lambda w: [fault(503), reply(RECOVERED)],
            0,
            0,
            _say(f"Reconnecting... 1/{RETRIES} ({refused} 503"),
        )
    )
    return cases


_TOO_LONG = "Your input exceeds the context window of this model."
_SLOW = "Rate limit reached. Please try again in 10ms."


def catalog() -> list[FaultCase]:
    """Every fault, in the order the table prints them."""
    overloaded = {
        "responses": ("server_is_overloaded", "The server is overloaded."),
        "chat": ("server_error", "The server had an error while processing your request."),
        "messages": ("overloaded_error", "Overloaded"),
    }
    invalid = "Invalid value for 'input': expected a list."
    return [
        # Silence and keepalives: the idle limit ends each attempt.
        FaultCase("keepalive only (comments)", _twice(keepalive()), 1, IDLE_BOUND, _say(IDLE_SSE)),
        # The wire's own keepalive events (Messages `ping`, Responses `keepalive`) are events:
        # as in Codex they show the provider is alive (a model thinking at length), so an
        # answer that takes longer than the idle limit between them still arrives.
        FaultCase(
            "typed keepalives, slow answer",
            lambda w: [keepalive(IDLE * 3, kind="event", reply=reply(RECOVERED))],
            0,
            IDLE * 3,
            _say(""),
            wires=("responses", "messages"),
        ),
        FaultCase(
            "byte drip, slower than idle",
            _twice(drip(every=0.02, size=1)),
            1,
            IDLE_BOUND,
            _say(IDLE_SSE),
        ),
        FaultCase("hang before headers", _twice(hang(30)), 1, IDLE_BOUND, _say(IDLE_HEADERS)),
        FaultCase("102 Processing forever", _twice(interim()), 1, IDLE_BOUND, _say(IDLE_HEADERS)),
        FaultCase(
            "headers a byte at a time",
            _twice(interim(every=0.02, drip=True)),
            1,
            IDLE_BOUND,
            _say(IDLE_HEADERS),
        ),
        FaultCase(
            "hang mid-stream", _twice(stall(30, after_events=2)), 1, IDLE_BOUND, _say(IDLE_SSE)
        ),
        FaultCase(
            "keepalives, then the answer",
            lambda w: [keepalive(IDLE / 2, reply=reply(RECOVERED))],
            0,
            IDLE,
            _say(""),
        ),
        # Broken streams: re-sent like a dropped connection.
        FaultCase(
            "drop mid-stream",
            _twice(drop_after(2)),
            1,
            0,
            _say("stream disconnected before completion"),
        ),
        FaultCase(
            "drop, then answer",
            lambda w: [drop_after(3), reply(RECOVERED)],
            0,
            0,
            _say(f"Reconnecting... 1/{RETRIES} (stream disconnected before completion"),
        ),
        FaultCase(
            "malformed SSE",
            _twice(raw_body("event: message\ndata: {this is not json\n\n")),
            1,
            0,
            _say("the server sent an event that is not JSON"),
        ),
        FaultCase(
            "wrong-shape JSON",
            _twice_per_wire(wrong_shape),
            1,
            0,
            lambda wire: f"event of the wrong shape: {_WRONG_SHAPE_PATH[wire]}",
        ),
        FaultCase(
            "wrong-shape JSON, then answer",
            _then_recover(wrong_shape),
            0,
            0,
            lambda wire: f"event of the wrong shape: {_WRONG_SHAPE_PATH[wire]}",
        ),
        FaultCase("choices: null", lambda w: [choices_null(w)], 0, 0, _say(""), wires=("chat",)),
        # Errors the server sends inside its stream.
        FaultCase(
            "mid-stream overloaded, then answer",
            _then_recover(lambda w: partial_then(w, stream_error(w, *overloaded[w]))),
            0,
            0,
            lambda wire: overloaded[wire][1],
        ),
        FaultCase(
            "mid-stream rate limit twice",
            _twice_per_wire(
                lambda w: partial_then(w, stream_error(w, "rate_limit_exceeded", _SLOW))
            ),
            1,
            0,
            _say("Rate limit reached"),
        ),
        FaultCase(
            "response.failed server_error, then answer",
            lambda w: [failed(code="server_error"), reply(RECOVERED)],
            0,
            0,
            _say("The server had an error while processing your request."),
            wires=("responses",),
        ),
        FaultCase(
            "mid-stream invalid request",
            lambda w: [partial_then(w, stream_error(w, "invalid_request_error", invalid))],
            1,
            0,
            _say(invalid),
        ),
        FaultCase(
            "mid-stream context length",
            lambda w: [failed(_TOO_LONG, "context_length_exceeded")] * 6,
            1,
            0,
            _say("context window"),
        ),
        *_statuses(),
    ]
