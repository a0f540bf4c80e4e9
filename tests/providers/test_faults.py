"""Fault injection through the real CLI, on each wire (Responses, Chat Completions, Messages):
what a CI job sees when the provider hangs, drips, garbles its stream, answers with the wrong
thing, refuses the key or the request's length. Each case checks the exit code, the JSONL
events, and that the API key never reaches stdout, stderr, the rollout or the run log.

Timeouts are shrunk through the provider's own keys (`stream_idle_timeout_ms`,
`request_max_retries`, `stream_max_retries`), so the suite stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import (
    ModelServer,
    Step,
    drip,
    failed,
    fault,
    hang,
    raw_body,
    reply,
    stall,
)

KEY = "sk-faults-SECRET-0123456789abcdef"
KEY_VAR = "FAULTS_API_KEY"
#: Short, so that a hang costs the suite little, and not shorter: a reply that is on its way
#: must still beat it on a loaded 2-core machine (at 400 ms a retry's answer once missed it
#: while the suite was starting up: npm installs, byte-compiling, four workers importing).
IDLE_MS = 1000
WIRES = pytest.mark.parametrize("wire", ["responses", "chat", "messages"])
PATHS = {"responses": "/responses", "chat": "/chat/completions", "messages": "/messages"}


def run(server: ModelServer, repo: Path, wire: str, *steps: Step, **provider: Any) -> CliResult:
    """`exec --json` against the scripted provider (key in $FAULTS_API_KEY, one retry of each
    kind, a short idle timeout), after checking the key leaked nowhere."""
    server.enqueue(*steps)
    settings: dict[str, Any] = {
        "env_key": KEY_VAR,
        "stream_idle_timeout_ms": IDLE_MS,
        "request_max_retries": 1,
        "stream_max_retries": 1,
        **provider,
    }
    result = run_cli(
        [*exec_args(server, wire=wire, **settings), "fix it"], cwd=repo, env={KEY_VAR: KEY}
    )
    assert KEY not in result.stdout and KEY not in result.stderr
    for folder in (Path(os.environ["OPENINTERPRETER_HOME"]), repo):
        for path in folder.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"
    assert "Traceback" not in result.stderr
    return result


def notices(result: CliResult) -> list[str]:
    """The retry notices (`error` events): `Reconnecting... n/N (reason)`."""
    return [e["message"] for e in result.events if e["type"] == "error"]


def failure(result: CliResult) -> str:
    last = result.events[-1]
    assert last["type"] == "turn.failed", result.stdout
    return str(last["error"]["message"])


def answered(result: CliResult, text: str) -> None:
    assert result.returncode == 0, result.stderr
    assert result.items("agent_message")[-1]["text"] == text
    assert result.events[-1]["type"] == "turn.completed"


# -- silence: before the headers, mid-stream, and a slow but steady drip --------------------


@WIRES
def test_a_server_silent_before_headers_is_retried_and_the_notice_names_the_key(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    result = run(model_server, repo, wire, hang(30), reply("answered on the retry"))

    answered(result, "answered on the retry")
    (notice,) = notices(result)
    assert notice.startswith("Reconnecting... 1/1 (request to Scripted at ")
    assert PATHS[wire] in notice
    limit = f"no response headers for {IDLE_MS / 1000:g}s, stream_idle_timeout_ms = {IDLE_MS}"
    assert f"timed out waiting for the response ({limit})" in notice
    assert len(model_server.model_requests) == 2


@WIRES
def test_a_stream_idle_mid_way_is_resent_and_gives_up_naming_the_key(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    ok = run(model_server, repo, wire, stall(30, after_events=2), reply("after the stall"))
    answered(ok, "after the stall")
    idle = (
        f"idle timeout waiting for SSE (no event for {IDLE_MS / 1000:g}s, "
        f"stream_idle_timeout_ms = {IDLE_MS})"
    )
    assert notices(ok) == [f"Reconnecting... 1/1 (stream disconnected before completion: {idle})"]

    gave_up = run(model_server, repo, wire, stall(30, after_events=2), stall(30, after_events=2))
    assert gave_up.returncode == 1
    assert failure(gave_up) == f"stream disconnected before completion: {idle}"
    assert len(model_server.model_requests) == 4


@WIRES
def test_a_slow_drip_within_the_idle_timeout_succeeds_without_a_retry(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    # Slices of 24 bytes every 20 ms cut events and JSON anywhere. The idle clock counts
    # events, so each event must arrive within the limit (the longest, Responses'
    # `response.completed`, takes about 0.45 s, under the 1.2 s limit), while the whole
    # stream may take longer (about 2 s on Responses): the limit is not a deadline.
    slow = drip(reply("drip, drip, done"), every=0.02, size=24)
    result = run(model_server, repo, wire, slow, stream_idle_timeout_ms=1200)

    answered(result, "drip, drip, done")
    assert notices(result) == []
    assert len(model_server.model_requests) == 1


# -- a garbled stream -------------------------------------------------------------------------


@WIRES
def test_an_event_that_is_not_json_is_retried_not_skipped(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    garbled = raw_body("event: message\ndata: {this is not json\n\n")
    result = run(model_server, repo, wire, garbled, reply("clean this time"))

    answered(result, "clean this time")
    assert notices(result) == [
        "Reconnecting... 1/1 (stream disconnected before completion: the server sent an "
        "event that is not JSON: '{this is not json')"
    ]


@WIRES
def test_truncated_json_cut_off_by_the_server_is_retried_then_fails_clearly(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    cut = raw_body('data: {"type":"response.output_item.done","item":{"type":"mess', complete=False)
    ok = run(model_server, repo, wire, cut, reply("whole this time"))
    answered(ok, "whole this time")
    (notice,) = notices(ok)
    assert notice.startswith("Reconnecting... 1/1 (stream disconnected before completion: ")

    truncated_event = raw_body('data: {"type":"response.output_item.done","item":{"ty\n\n')
    gave_up = run(model_server, repo, wire, truncated_event, truncated_event)
    assert gave_up.returncode == 1
    assert failure(gave_up).startswith(
        "stream disconnected before completion: the server sent an event that is not JSON: "
    )


@WIRES
def test_a_web_page_instead_of_an_event_stream_fails_at_once_naming_base_url(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    page = raw_body("<html><body>Sign in to the proxy</body></html>", content_type="text/html")
    result = run(model_server, repo, wire, page, reply("never sent"))

    assert result.returncode == 1
    message = failure(result)
    assert "answered 'text/html' instead of an event stream" in message
    assert "Sign in to the proxy" in message
    assert "model_providers.scripted.base_url" in message
    assert notices(result) == []
    assert len(model_server.model_requests) == 1


# -- refusals: the key, the endpoint, the length ----------------------------------------------


# 403 takes 401's path in the shared HTTP layer: one wire is enough for it.
@pytest.mark.parametrize(
    ("wire", "status", "advice"),
    [
        *[(w, 401, f"Check the API key in ${KEY_VAR}.") for w in PATHS],
        ("chat", 403, f"Check the API key in ${KEY_VAR}."),
        *[
            (w, 404, "Check the model name (-m) and model_providers.scripted.base_url")
            for w in PATHS
        ],
    ],
)
def test_auth_and_not_found_are_not_retried_and_say_what_to_check(
    model_server: ModelServer, repo: Path, wire: str, status: int, advice: str
) -> None:
    # Real servers echo (part of) a rejected key; `run` checks it is masked everywhere.
    echo = fault(status, message=f"Incorrect API key provided: {KEY}.")
    result = run(model_server, repo, wire, echo, reply("never sent"))

    assert result.returncode == 1
    message = failure(result)
    assert message.startswith(f"unexpected status {status} ")
    assert "Incorrect API key provided: [REDACTED]" in message
    assert advice in message
    assert notices(result) == []
    assert len(model_server.model_requests) == 1


def _too_long(wire: str, kind: str) -> Step:
    if kind == "413":
        return fault(413, message="Request Entity Too Large")
    if kind == "stream":
        return failed(
            "Your input exceeds the context window of this model.", "context_length_exceeded"
        )
    if wire == "messages":
        return fault(400, message="prompt is too long: 210000 tokens > 200000 maximum")
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    return fault(400, body=body)


# Each wire's own wording, in an HTTP error and inside a stream; a plain 413 takes the shared
# HTTP layer's path, so one wire is enough for it.
@pytest.mark.parametrize(
    ("wire", "kind"),
    [("messages", "413"), *[(w, k) for w in PATHS for k in ("vendor", "stream")]],
)
def test_a_request_too_long_for_the_window_fails_clearly_and_is_never_retried_as_transient(
    model_server: ModelServer, repo: Path, wire: str, kind: str
) -> None:
    # Every request is refused (the loop may compact and ask again; it cannot succeed here).
    steps = [_too_long(wire, kind) for _ in range(6)]
    result = run(model_server, repo, wire, *steps)

    assert result.returncode == 1
    message = failure(result)
    assert "context window" in message
    assert not [n for n in notices(result) if n.startswith("Reconnecting")]
    assert len(model_server.model_requests) <= 3


def test_a_rate_limit_that_mentions_tokens_is_still_retried(
    model_server: ModelServer, repo: Path
) -> None:
    busy = fault(
        429, retry_after=0, message="Request too large: maximum context length of tokens per min"
    )
    result = run(model_server, repo, "responses", busy, reply("after the wait"))

    answered(result, "after the wait")
    (notice,) = notices(result)
    assert notice.startswith("Reconnecting... 1/1 (unexpected status 429 ")
