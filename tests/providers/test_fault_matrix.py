"""The fault matrix through the real CLI: keepalives, drips, hangs before the headers and
mid-stream, drops, wrong-shape JSON, errors sent inside the stream, refusing statuses. The
faults are defined once in tests/support/fault_catalog.py (bench/fault_table.py prints all
of them on every wire); here each runs on the wires where the wire changes what is sent,
and on one wire, a different one each, where only the HTTP layer is involved.

Each run asserts the exit code, that the message names the cause (the idle limit and its
key, the field path, the server's words), the number of requests (one retry, or none for
what re-sending cannot fix), that a recovered run kept nothing of the failed attempt, that
the key leaked nowhere, and a time bound counted from the run's first model request (the
runner's start-up, which load stretches most, is left out): three times what the fault may
cost, plus `SLACK` for a loaded machine. The precise bounds are held in-process
(test_idle.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.fault_catalog import (
    RECOVERED,
    RETRIES,
    FaultCase,
    catalog,
    key_leaks,
    run_fault,
)
from tests.support.model_server import ModelServer, Wire

_BY_NAME = {case.name: case for case in catalog()}

#: (fault, wire): every wire where the wire shapes the fault, else one. Left to faster tests:
#: Responses `keepalive` events (test_idle.py), a 5xx then an answer (test_retries.py) and
#: what test_faults.py runs per wire (silence before headers and mid-stream, garbled and
#: truncated events, a web page, 401/403/404, a request too long).
MATRIX: list[tuple[str, Wire]] = [
    ("keepalive only (comments)", "chat"),
    ("typed keepalives, slow answer", "messages"),
    ("byte drip, slower than idle", "messages"),
    ("hang before headers", "responses"),
    ("102 Processing forever", "chat"),
    ("headers a byte at a time", "messages"),
    ("drop mid-stream", "responses"),
    ("wrong-shape JSON", "responses"),
    ("wrong-shape JSON", "chat"),
    ("wrong-shape JSON", "messages"),
    ("choices: null", "chat"),
    ("mid-stream overloaded, then answer", "responses"),
    ("mid-stream overloaded, then answer", "chat"),
    ("mid-stream overloaded, then answer", "messages"),
    ("mid-stream rate limit twice", "chat"),
    ("response.failed server_error, then answer", "responses"),
    ("mid-stream invalid request", "responses"),
    ("mid-stream invalid request", "chat"),
    ("mid-stream invalid request", "messages"),
    ("HTTP 429 twice", "messages"),
    ("HTTP 500 twice", "chat"),
    ("HTTP 529 twice", "messages"),
]

#: Seconds a loaded 2-core machine may add after the first request: a clean run's takes
#: 0.3 s on an idle one and up to 4 s at a load average of 9 (the exit writes the rollout).
SLACK = 8.0
#: Faults that re-sending cannot fix: one request, no retry notice.
_FINAL = {"mid-stream invalid request", "typed keepalives, slow answer"}


@pytest.mark.parametrize(("name", "wire"), MATRIX, ids=[f"{n}-{w}" for n, w in MATRIX])
def test_each_fault_ends_with_its_exit_code_naming_the_cause_in_bounded_time(
    model_server: ModelServer, repo: Path, name: str, wire: Wire
) -> None:
    case: FaultCase = _BY_NAME[name]
    run = run_fault(model_server, repo, wire, *case.steps(wire), timeout=40)

    assert run.result.returncode == case.exit_code, run.result.stdout + run.result.stderr
    assert "Traceback" not in run.result.stderr
    assert not key_leaks(run, Path(os.environ["OPENINTERPRETER_HOME"]), repo)
    assert run.says(case.says(wire)), (run.failure, run.notices)
    assert run.fault_seconds < 3 * case.bound + SLACK, run.fault_seconds
    if case.exit_code == 0:
        # The failed attempt's partial answer is gone: one message, the retry's.
        assert run.messages == [RECOVERED]
        assert run.events[-1]["type"] == "turn.completed"
    else:
        assert run.events[-1]["type"] == "turn.failed"
        assert run.messages == []
    reconnecting = [n for n in run.notices if n.startswith("Reconnecting... ")]
    if name in _FINAL or case.name == "choices: null":
        assert (run.requests, reconnecting) == (1, [])
    else:
        assert run.requests == RETRIES + 1
        assert [n.split(" (")[0] for n in reconnecting] == [f"Reconnecting... 1/{RETRIES}"]
