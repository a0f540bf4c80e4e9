"""Retries, error mapping and client selection, over loopback against the scripted server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ConfigError, ProviderError
from oiexec.core.protocols import ModelClient
from oiexec.core.types import Message, ModelRequest, ModelResponse
from oiexec.providers.chat import ChatClient
from oiexec.providers.http import RetryTiming, parse_retry_after
from oiexec.providers.registry import create_client
from oiexec.providers.responses import ResponsesClient
from tests.support.model_server import (
    ModelServer,
    drop_after,
    fault,
    raw_body,
    reply,
    running_model_server,
    stall,
)

KEY = "sk-live-SECRET-0123456789abcdef"
REQUEST = ModelRequest(
    model="gpt-5.5", instructions="Be brief.", history=(Message(role="user", text="hi"),)
)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


class Run:
    """One `respond` call, remembering the on_retry calls it made."""

    def __init__(self, server: ModelServer, wire: str = "responses", **provider: Any) -> None:
        provider.setdefault("stream_idle_timeout_ms", 2_000)
        self.client: ModelClient = create_client(
            "scripted",
            server.provider_config(wire, env_key="SCRIPTED_API_KEY", **provider),  # type: ignore[arg-type]
            KEY,
            timing=RetryTiming(base_delay=0.001),
        )
        self.retries: list[tuple[int, int, str]] = []

    def __call__(self) -> ModelResponse:
        try:
            return self.client.respond(REQUEST, lambda *a: self.retries.append(a))
        finally:
            self.client.close()


WIRES = pytest.mark.parametrize("wire", ["responses", "chat"])


@WIRES
def test_429_is_retried_after_the_retry_after_delay(server: ModelServer, wire: str) -> None:
    server.enqueue(fault(429, retry_after=1, message="Rate limit reached"), reply("recovered"))
    run = Run(server, wire)

    started = time.monotonic()
    response = run()
    elapsed = time.monotonic() - started

    assert response.final_text == "recovered"
    assert elapsed >= 0.95
    assert len(run.retries) == 1
    attempt, max_attempts, reason = run.retries[0]
    assert (attempt, max_attempts) == (1, 4)
    assert "429" in reason and "Rate limit reached" in reason


def test_retry_after_is_capped(server: ModelServer) -> None:
    server.enqueue(fault(503, retry_after=3600), reply("ok"))
    client = ResponsesClient(
        server.provider_config(),
        None,
        timing=RetryTiming(base_delay=0.001, max_retry_after=0.05),
    )
    started = time.monotonic()
    try:
        client.respond(REQUEST, lambda *a: None)
    finally:
        client.close()
    assert time.monotonic() - started < 2


def test_retry_after_accepts_seconds_dates_and_milliseconds() -> None:
    now = 1_700_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 30))
    assert parse_retry_after(httpx.Headers({"retry-after": "2.5"})) == 2.5
    assert parse_retry_after(httpx.Headers({"retry-after": date}), now=now) == pytest.approx(30)
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers()) is None


@WIRES
def test_server_errors_are_retried_then_succeed(server: ModelServer, wire: str) -> None:
    server.enqueue(fault(500), fault(502), fault(408), reply("third time lucky"))
    run = Run(server, wire)

    assert run().final_text == "third time lucky"
    assert [(a, n) for a, n, _ in run.retries] == [(1, 4), (2, 4), (3, 4)]
    assert len(server.model_requests) == 4


def test_gives_up_after_request_max_retries(server: ModelServer) -> None:
    server.enqueue(*[fault(500, message="upstream exploded")] * 3)
    run = Run(server, request_max_retries=2)

    with pytest.raises(ProviderError) as caught:
        run()

    message = caught.value.message
    assert message.startswith("unexpected status 500 Internal Server Error from Scripted")
    assert "upstream exploded" in message
    assert [(a, n) for a, n, _ in run.retries] == [(1, 2), (2, 2)]
    assert server.remaining == 0
    assert len(server.model_requests) == 3


@WIRES
def test_dropped_stream_is_resent_and_yields_one_response(server: ModelServer, wire: str) -> None:
    server.enqueue(drop_after(3), reply("complete answer"))
    run = Run(server, wire)

    response = run()

    assert response.items == (Message(role="assistant", text="complete answer"),)
    assert len(run.retries) == 1
    attempt, max_attempts, reason = run.retries[0]
    assert (attempt, max_attempts) == (1, 5)
    assert reason.startswith("stream disconnected before completion:")
    assert server.bodies[0] == server.bodies[1]


@WIRES
def test_idle_stream_times_out_and_is_retried(server: ModelServer, wire: str) -> None:
    server.enqueue(stall(5, after_events=2), reply("after the stall"))
    run = Run(server, wire, stream_idle_timeout_ms=300)

    started = time.monotonic()
    response = run()

    assert response.final_text == "after the stall"
    assert time.monotonic() - started < 3
    # The notice names the key to raise, as well as Codex's wording of the fault.
    assert run.retries == [
        (
            1,
            5,
            "stream disconnected before completion: idle timeout waiting for SSE "
            "(no event for 0.3s, stream_idle_timeout_ms = 300)",
        )
    ]


def test_a_pause_shorter_than_the_idle_timeout_is_fine(server: ModelServer) -> None:
    server.enqueue(stall(0.3, after_events=2, reply=reply("patient")))
    run = Run(server, stream_idle_timeout_ms=3_000)

    assert run().final_text == "patient"
    assert run.retries == []


def test_gives_up_after_stream_max_retries(server: ModelServer) -> None:
    server.enqueue(drop_after(2), drop_after(2), drop_after(2))
    run = Run(server, stream_max_retries=2)

    with pytest.raises(ProviderError) as caught:
        run()

    assert caught.value.message.startswith("stream disconnected before completion:")
    assert [(a, n) for a, n, _ in run.retries] == [(1, 2), (2, 2)]
    assert len(server.model_requests) == 3


def test_no_retries_configured_fails_at_once(server: ModelServer) -> None:
    server.enqueue(fault(500), reply("never sent"))
    run = Run(server, request_max_retries=0)

    with pytest.raises(ProviderError, match="500"):
        run()
    assert run.retries == []
    assert server.remaining == 1


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_are_not_retried(server: ModelServer, status: int) -> None:
    server.enqueue(fault(status, message="Unsupported parameter: 'reasoning.effort'"))
    run = Run(server)

    with pytest.raises(ProviderError) as caught:
        run()

    assert str(status) in caught.value.message
    assert "Unsupported parameter: 'reasoning.effort'" in caught.value.message
    assert run.retries == []
    assert len(server.model_requests) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_name_the_env_var_and_hide_the_key(server: ModelServer, status: int) -> None:
    # Real servers echo (part of) the bad key back; the message must not carry it.
    server.enqueue(fault(status, message=f"Incorrect API key provided: {KEY}."))
    run = Run(server, wire="chat")

    with pytest.raises(ProviderError) as caught:
        run()

    rendered = caught.value.render()
    assert KEY not in rendered
    assert str(status) in rendered
    assert "Check the API key in $SCRIPTED_API_KEY" in rendered
    assert run.retries == []


def test_quota_429_is_not_retried(server: ModelServer) -> None:
    body = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    server.enqueue(fault(429, body=body), reply("never"))
    run = Run(server)

    with pytest.raises(ProviderError, match="exceeded your current quota"):
        run()
    assert run.retries == []


def test_connection_refused_is_retried_then_reported() -> None:
    with running_model_server() as gone:
        base_url = gone.base_url
    provider = ProviderConfig(name="Offline", base_url=base_url, request_max_retries=2)
    client = ResponsesClient(provider, None, timing=RetryTiming(base_delay=0.001))
    retries: list[tuple[int, int, str]] = []

    with pytest.raises(ProviderError) as caught:
        try:
            client.respond(REQUEST, lambda *a: retries.append(a))
        finally:
            client.close()

    assert caught.value.message.startswith("could not reach Offline at http://127.0.0.1:")
    assert [(a, n) for a, n, _ in retries] == [(1, 2), (2, 2)]


def test_non_sse_success_is_an_error_not_a_retry_loop(server: ModelServer) -> None:
    class JsonAnswer(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"id": "resp_1", "output": []})

    client = ResponsesClient(server.provider_config(), None, transport=JsonAnswer())
    try:
        with pytest.raises(ProviderError, match="instead of an event stream"):
            client.respond(REQUEST, lambda *a: None)
    finally:
        client.close()


def test_registry_picks_the_client_by_wire(server: ModelServer) -> None:
    responses = create_client("a", server.provider_config("responses"), None)
    chat = create_client("b", server.provider_config("chat"), None)
    try:
        assert isinstance(responses, ResponsesClient)
        assert isinstance(chat, ChatClient)
    finally:
        responses.close()
        chat.close()


def test_registry_serves_messages_wire_and_rejects_missing_base_url() -> None:
    # The Messages wire exists now (oiexec/providers/messages.py).
    client = create_client(
        "anthropic", ProviderConfig(base_url="http://x", wire_api="messages"), None
    )
    client.close()
    assert type(client).__name__ == "MessagesClient"
    with pytest.raises(ConfigError, match="no base_url"):
        create_client("empty", ProviderConfig(), None)


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    timing = RetryTiming(base_delay=0.2, max_delay=1.0)
    assert 0.18 <= timing.backoff(1) <= 0.22
    assert 0.72 <= timing.backoff(3) <= 0.88
    assert 0.9 <= timing.backoff(10) <= 1.1


def test_base_delay_can_be_set_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OIEXEC_RETRY_BASE_DELAY_MS", "5")
    assert RetryTiming.from_env().base_delay == 0.005
    monkeypatch.setenv("OIEXEC_RETRY_BASE_DELAY_MS", "fast")
    assert RetryTiming.from_env() == RetryTiming()
    monkeypatch.delenv("OIEXEC_RETRY_BASE_DELAY_MS")
    assert RetryTiming.from_env().base_delay == 0.2


@pytest.mark.parametrize("first", [fault(500), drop_after(1)], ids=["status", "stream"])
def test_an_exception_from_on_retry_stops_retrying(server: ModelServer, first: Any) -> None:
    # The runner raises from on_retry when the run's deadline has passed.
    class Deadline(Exception):
        pass

    def on_retry(attempt: int, max_attempts: int, reason: str) -> None:
        raise Deadline(reason)

    server.enqueue(first, reply("never"))
    client = create_client("scripted", server.provider_config(), None)
    try:
        with pytest.raises(Deadline):
            client.respond(REQUEST, on_retry)
    finally:
        client.close()
    assert server.remaining == 1


def test_a_web_page_cut_short_is_reported_not_raised(server: ModelServer) -> None:
    # A proxy's login page whose connection drops before the page ends: what arrived is
    # reported (the body read fails as a transport error, which must not escape).
    server.enqueue(raw_body("<html>Sign in", content_type="text/html", complete=False))
    run = Run(server)

    with pytest.raises(ProviderError, match="answered 'text/html' instead of an event stream"):
        run()
    assert run.retries == []
