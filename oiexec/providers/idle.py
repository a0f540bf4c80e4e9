"""`stream_idle_timeout_ms` counted in events, not bytes.

A proxy in front of a provider can keep a dead request open forever with bytes that say
nothing: SSE comments (`: ping`), blank lines, 1xx interim responses before the headers, or
an answer dripped a byte at a time. httpx's read timeout restarts on every byte, so none of
these ever trips it. Here the idle clock restarts only when something complete arrives: the
response headers, then each SSE event that carries data. The wire's own keepalive events
(Anthropic's `ping`, OpenAI's `keepalive`) count, as they do in Codex: they are sent by the
provider while the model works (a long think), not by a proxy; `--timeout` bounds such a run.
They are dropped before the wire (`is_keepalive`) and do not end the wait for an answer.

`IdleWatch` holds that clock for one request. A watchdog thread shuts the request's socket
down when the clock runs out, which wakes the blocked read at once (a check between reads
alone would let a keepalive just before the limit buy a whole extra read timeout). Where no
socket can be found (a transport without one, such as tests' mock transports), every chunk
that arrives is checked against the clock instead, and httpx's read timeout still bounds a
silent wait.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import suppress
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

__all__ = ["ConnectionLedger", "IdleWatch", "is_keepalive"]

#: Event types that only say "still here": Anthropic's `ping` and OpenAI Responses'
#: (undocumented) `keepalive`. Sent as the SSE event name, the JSON `type`, or both.
_KEEPALIVE_TYPES = frozenset({"ping", "keepalive"})
#: Keepalive events are a few dozen bytes; longer data is never parsed twice to find out.
_MAX_KEEPALIVE_DATA = 200


def is_keepalive(event: ServerSentEvent) -> bool:
    """Whether an SSE event says nothing about the answer: no data, or a keepalive event."""
    data = event.data.strip()
    if not data or event.event in _KEEPALIVE_TYPES:
        return True
    if len(data) > _MAX_KEEPALIVE_DATA or not any(t in data for t in _KEEPALIVE_TYPES):
        return False
    try:
        payload = json.loads(data)
    except ValueError:
        return False  # not JSON: the wire reports it as a garbled stream
    return isinstance(payload, dict) and payload.get("type") in _KEEPALIVE_TYPES


class ConnectionLedger:
    """The network streams one client has opened, and how many of its requests are in flight.

    httpcore names the stream only when it opens a connection; on a kept-alive connection
    the wait for headers has no handle to end. When a client has a single request in flight,
    every stream it holds is either that request's or idle in its pool, so a watchdog may
    shut them all (an idle pooled connection found shut is dropped and replaced). With
    several requests in flight it may not, and the read timeout bounds the wait instead."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: weakref.WeakSet[Any] = weakref.WeakSet()
        self._in_flight = 0

    def opened(self, stream: Any) -> None:
        with self._lock:
            self._streams.add(stream)

    def begin(self) -> None:
        with self._lock:
            self._in_flight += 1

    def end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def sole_request_streams(self) -> list[Any]:
        """Every stream, if exactly one request is in flight; else none."""
        with self._lock:
            return list(self._streams) if self._in_flight == 1 else []


class IdleWatch:
    """The idle clock of one request, from the moment it waits for the response headers to
    the end of its stream. Create it per request; `close` it before the response is closed
    (so the watchdog can never touch a connection handed back to the pool)."""

    def __init__(self, limit: float, ledger: ConnectionLedger) -> None:
        self.limit = limit
        self._ledger = ledger
        # The request's side runs in the main thread, where Ctrl-C, SIGTERM and --timeout
        # raise from their signal handlers wherever it is. A `threading.Condition` is not safe
        # there: an exception landing just after its Python `__enter__` took the lock left
        # the lock held for good, and one inside `notify` left its waiter list inconsistent;
        # either way the watchdog never woke and `close` joined it forever (a batch task
        # outliving SIGTERM until the batch killed it). So the two sides share no lock: the
        # state is plain attributes, each written whole, and the watchdog sleeps on `_wake`,
        # a C lock held while no wake is pending, which one C call (`release`) wakes.
        self._wake = threading.Lock()
        self._wake.acquire()
        #: Unarmed until the request has been sent: a slow upload is not an idle stream.
        self._deadline = float("inf")
        self._stream: Any = None
        self._closed = False
        #: The watchdog ran out the clock and shut the connection down.
        self.fired = False
        self._thread = threading.Thread(target=self._watch, name="oiexec-stream-idle", daemon=True)
        self._thread.start()  # first: if no thread can be had, there is nothing to undo
        ledger.begin()

    # -- the request's side ---------------------------------------------------------------

    @property
    def extensions(self) -> dict[str, Any]:
        """Request extensions that let the watch follow the request through httpcore."""
        return {"trace": self._trace}

    def attach(self, response: httpx.Response) -> None:
        """The headers arrived (they count as progress): from now on the clock guards this
        response's own connection, and every chunk is checked against it too."""
        stream = response.extensions.get("network_stream")
        if stream is not None:
            self._stream = stream
        self._deadline = time.monotonic() + self.limit
        self._poke()
        if isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _CheckedStream(response.stream, self)

    def progress(self) -> None:
        """A complete event arrived. The watchdog is not woken: it finds the later deadline
        when its wait ends, so a busy stream costs no thread switches."""
        self._deadline = time.monotonic() + self.limit

    def expired(self) -> bool:
        return self.fired or time.monotonic() >= self._deadline

    def close(self) -> None:
        """Stop the watchdog and wait for its thread (idempotent). Once this returns, the
        watchdog has shut nothing down since and never will (a shutdown under way when it was
        called has ended)."""
        if self._closed:
            return
        self._closed = True
        self._poke()
        self._thread.join()
        self._ledger.end()

    def _poke(self) -> None:
        """Wakes the watchdog to look at the state again (one wake pending at most)."""
        with suppress(RuntimeError):  # not held: a wake is already pending
            self._wake.release()

    # -- httpcore's trace extension (runs on the request's thread) -------------------------

    def _trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            if stream is not None:
                self._ledger.opened(stream)
                self._stream = stream
        elif name == "http11.receive_response_headers.started":
            self._deadline = time.monotonic() + self.limit
            self._poke()

    # -- the watchdog thread ----------------------------------------------------------------

    def _watch(self) -> None:
        while not self._closed:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self.fired = True
                self._shut_down()
                return
            self._wake.acquire(timeout=-1 if remaining == float("inf") else remaining)

    def _shut_down(self) -> None:
        streams = [self._stream] if self._stream is not None else []
        if self._stream is None or not _has_socket(self._stream):
            streams += self._ledger.sole_request_streams()
        for stream in streams:
            sock = _socket_of(stream)
            if sock is not None:
                # The plain socket call even for a TLS socket: `SSLSocket.shutdown` would
                # unwrap the TLS object under the reading thread's feet; shutting the
                # descriptor makes that read see end-of-file, which httpx reports as a
                # transport error.
                with suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _CheckedStream(httpx.SyncByteStream):
    """A response body that ends the stream as timed out when a chunk arrives after the
    deadline: the bound where the watchdog found no socket to shut."""

    def __init__(self, inner: httpx.SyncByteStream, watch: IdleWatch) -> None:
        self._inner = inner
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if self._watch.expired():
                raise httpx.ReadTimeout("no complete event within the idle timeout")
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _socket_of(stream: Any) -> socket.socket | None:
    try:
        sock = stream.get_extra_info("socket")
    except Exception:  # a third-party stream: no socket to shut is the fallback's case
        return None
    return sock if isinstance(sock, socket.socket) else None


def _has_socket(stream: Any) -> bool:
    return _socket_of(stream) is not None
