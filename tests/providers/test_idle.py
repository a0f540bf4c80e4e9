"""The idle clock (`providers.idle`): what restarts it, the watchdog that ends a wait at the
limit, and the fallback where no socket can be shut. In-process, against the scripted server
or a socket pair; the fault matrix through the CLI is in test_fault_matrix.py."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import ServerSentEvent

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ProviderError
from oiexec.core.types import Message, ModelRequest
from oiexec.providers.http import RetryTiming
from oiexec.providers.idle import ConnectionLedger, IdleWatch, is_keepalive
from oiexec.providers.registry import create_client
from tests.support.model_server import (
    ModelServer,
    Step,
    Wire,
    fault,
    interim,
    keepalive,
    reply,
    running_model_server,
)

REQUEST = ModelRequest(
    model="m", instructions="Be brief.", history=(Message(role="user", text="hi"),)
)
LIMIT_MS = 300


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "oiexec-stream-idle"]


class _Socket:
    """A network stream as httpcore hands it to the trace extension: one end of a pair."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, info: str) -> Any:
        return self.sock if info == "socket" else None


def _respond(server: ModelServer, wire: Wire, *steps: Step, **provider: Any) -> tuple[str, float]:
    """One `respond` against `steps`; the failure message (or the answer) and the seconds."""
    server.enqueue(*steps)
    settings: dict[str, Any] = {
        "stream_idle_timeout_ms": LIMIT_MS,
        "stream_max_retries": 0,
        "request_max_retries": 0,
        **provider,
    }
    client = create_client(
        "scripted", server.provider_config(wire, **settings), None, timing=RetryTiming(0.001)
    )
    started = time.monotonic()
    try:
        return str(client.respond(REQUEST, lambda *a: None).final_text), time.monotonic() - started
    except ProviderError as exc:
        return exc.message, time.monotonic() - started
    finally:
        client.close()


# -- what counts as progress --------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "data", "keepalive"),
    [
        ("ping", '{"type": "ping"}', True),  # Anthropic Messages
        ("keepalive", '{"type":"keepalive","sequence_number":466}', True),  # OpenAI Responses
        ("", '{"type":"keepalive","sequence_number":1}', True),  # unnamed, typed in the data
        ("message", '{"type": "ping"}', True),
        ("", "", True),  # a bare `event:` line, or an `id:`, and no data
        ("ping", "", True),
        ("", "   ", True),
        (
            "response.output_text.delta",
            '{"type":"response.output_text.delta","delta":"ping"}',
            False,
        ),
        ("", '{"choices":[{"delta":{"content":"keepalive"}}]}', False),
        ("", "ping", False),  # not JSON: the wire reports it as garbled
        ("", "[DONE]", False),
        ("", '{"type": "ping", "pad": "' + "x" * 300 + '"}', False),  # too long for a keepalive
    ],
)
def test_only_an_event_with_data_that_is_not_a_keepalive_restarts_the_clock(
    event: str, data: str, keepalive: bool
) -> None:
    assert is_keepalive(ServerSentEvent(event=event, data=data)) is keepalive


# -- the watchdog -----------------------------------------------------------------------------


def test_the_watchdog_shuts_the_socket_at_the_limit_counted_from_the_last_progress() -> None:
    ours, theirs = socket.socketpair()
    ours.settimeout(5)  # a watchdog that never fires fails the test, not hangs it
    ledger = ConnectionLedger()
    watch = IdleWatch(0.3, ledger)
    try:
        watch._trace("connection.connect_tcp.complete", {"return_value": _Socket(ours)})
        started = time.monotonic()
        watch._trace("http11.receive_response_headers.started", {"request": None})
        time.sleep(0.2)  # a keepalive-free pause shorter than the limit, then progress
        watch.progress()
        assert ours.recv(10) == b""  # blocks until the watchdog shuts the socket down
        elapsed = time.monotonic() - started
    finally:
        watch.close()
        ours.close()
        theirs.close()
    assert watch.fired
    # Never before the limit from the last progress; well before two limits on a loaded box.
    assert 0.5 <= elapsed < 1.2
    assert not _watch_threads()


def test_a_watch_closed_in_time_never_fires_and_leaves_no_thread() -> None:
    ours, theirs = socket.socketpair()
    watch = IdleWatch(0.05, ConnectionLedger())
    watch._trace("connection.connect_tcp.complete", {"return_value": _Socket(ours)})
    watch.close()
    watch.close()  # idempotent
    try:
        theirs.sendall(b"still open")
        assert ours.recv(10) == b"still open"
    finally:
        ours.close()
        theirs.close()
    assert not watch.fired
    assert not _watch_threads()


def test_before_the_request_is_sent_the_clock_does_not_run() -> None:
    # A slow upload is not an idle stream: unarmed until the wait for headers starts.
    watch = IdleWatch(0.01, ConnectionLedger())
    try:
        time.sleep(0.05)
        assert not watch.expired() and not watch.fired
    finally:
        watch.close()


# -- end to end over loopback -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "step"),
    [
        ("responses", keepalive(kind="comment")),  # `: ping` comments, a proxy's
        ("messages", keepalive(kind="blank")),  # blank lines
        ("chat", keepalive(kind="comment")),
        ("chat", keepalive(kind="blank", after_events=0)),  # blank lines, from the start
    ],
)
def test_keepalives_alone_end_the_stream_at_the_limit(
    server: ModelServer, wire: Wire, step: Step
) -> None:
    message, elapsed = _respond(server, wire, step)

    assert message == (
        "stream disconnected before completion: idle timeout waiting for SSE "
        f"(no event for 0.3s, stream_idle_timeout_ms = {LIMIT_MS})"
    )
    assert 0.3 <= elapsed < 1.5


@pytest.mark.parametrize("step", [interim(), interim(every=0.02, drip=True)], ids=["102", "drip"])
def test_a_wait_for_headers_that_only_receives_bytes_ends_at_the_limit(
    server: ModelServer, step: Step
) -> None:
    message, elapsed = _respond(server, "responses", step)

    assert message.endswith(
        "timed out waiting for the response "
        f"(no response headers for 0.3s, stream_idle_timeout_ms = {LIMIT_MS})"
    )
    assert 0.3 <= elapsed < 1.5


@pytest.mark.parametrize("wire", ["responses", "messages"])
def test_the_wires_own_keepalive_events_keep_a_slow_answer_alive(
    server: ModelServer, wire: Wire
) -> None:
    # Responses `keepalive` and Messages `ping` events come from the provider itself (a model
    # thinking at length): as in Codex they count, so three limits of them then the answer
    # succeed, where as many seconds of comments end the stream.
    text, elapsed = _respond(server, wire, keepalive(0.9, kind="event", reply=reply("there")))
    assert text == "there"
    assert elapsed >= 0.9


def test_interim_responses_on_a_kept_alive_connection_end_at_the_limit(
    server: ModelServer,
) -> None:
    # The retry after the 429 reuses its connection (the error body was read to the end),
    # so httpcore names no stream for it: the watchdog shuts the client's connections, as it
    # has one request in flight.
    server.enqueue(fault(429, retry_after=0), interim())
    provider = server.provider_config(
        "chat", stream_idle_timeout_ms=LIMIT_MS, request_max_retries=1, stream_max_retries=0
    )
    client = create_client("scripted", provider, None, timing=RetryTiming(0.001))
    outcome: list[tuple[str, float]] = []

    def respond() -> None:
        started = time.monotonic()
        try:
            client.respond(REQUEST, lambda *a: None)
        except ProviderError as exc:
            outcome.append((exc.message, time.monotonic() - started))
        finally:
            client.close()

    worker = threading.Thread(target=respond, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "the wait for headers never ended"
    ((message, elapsed),) = outcome
    assert message.endswith(
        "timed out waiting for the response "
        f"(no response headers for 0.3s, stream_idle_timeout_ms = {LIMIT_MS})"
    )
    assert 0.3 <= elapsed < 1.5
    assert not _watch_threads()


def test_without_a_socket_every_chunk_is_checked_against_the_clock(server: ModelServer) -> None:
    class Pings(httpx.BaseTransport):
        """A transport with no network stream: keepalive comments, forever."""

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            def body() -> Iterator[bytes]:
                while True:
                    time.sleep(0.02)
                    yield b": ping\n\n"

            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=body())

    provider = server.provider_config("responses", stream_idle_timeout_ms=LIMIT_MS)
    provider = provider.model_copy(update={"stream_max_retries": 0})
    client = create_client("scripted", provider, None, transport=Pings())
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError, match="idle timeout waiting for SSE"):
            client.respond(REQUEST, lambda *a: None)
    finally:
        client.close()
    assert 0.3 <= time.monotonic() - started < 1.5


def test_keepalive_events_do_not_count_as_the_model_answering(server: ModelServer) -> None:
    # The transcript's "waiting for the model" heartbeat goes on through keepalives.
    class Observer:
        def __init__(self) -> None:
            self.answered_at: list[float] = []

        def waiting(self) -> None:
            pass

        def answered(self) -> None:
            self.answered_at.append(time.monotonic())

    observer = Observer()
    server.enqueue(keepalive(0.4, every=0.05, kind="event", reply=reply("thought it over")))
    provider = server.provider_config("responses", stream_idle_timeout_ms=5_000)
    client = create_client("scripted", provider, None, wait_observer=observer)
    started = time.monotonic()
    try:
        assert client.respond(REQUEST, lambda *a: None).final_text == "thought it over"
    finally:
        client.close()
    assert observer.answered_at[0] - started >= 0.4


def test_a_body_delimited_by_the_connection_close_still_reports_the_idle_limit() -> None:
    # An HTTP/1.0-style proxy: no length, no chunks, the body ends when the connection does.
    # The watchdog's shutdown then reads as a clean end; the message must still name the limit.
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            )
            with contextlib.suppress(OSError):
                while not stop.wait(0.05):
                    conn.sendall(b": ping\n\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    port = listener.getsockname()[1]
    provider = ProviderConfig(
        base_url=f"http://127.0.0.1:{port}/v1",
        env_key=None,
        stream_idle_timeout_ms=LIMIT_MS,
        stream_max_retries=0,
    )
    client = create_client("scripted", provider, None)
    try:
        with pytest.raises(
            ProviderError, match=r"idle timeout waiting for SSE \(no event for 0.3s"
        ):
            client.respond(REQUEST, lambda *a: None)
    finally:
        client.close()
        stop.set()
        server.join(timeout=5)
        listener.close()
