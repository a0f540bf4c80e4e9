"""The HTTP side shared by every wire: client factory, error mapping, retries, SSE streaming.

Two retry budgets, as in Codex: `request_max_retries` covers a request that fails before the
stream starts (connection errors, 408/409/429/5xx); `stream_max_retries` covers a stream that
drops or goes idle after a 200, by re-sending the whole request. Wires return only complete
responses, so a retried stream never yields anything twice. A failure still worth retrying
when its budget is spent is `ProviderUnavailable` (what `model_fallbacks` moves on from); one
not worth retrying (a bad key, a bad request) is a plain `ProviderError`.

`stream_idle_timeout_ms` bounds every wait for something complete: the response headers, then
each SSE event with data (`providers.idle`: keepalive comments and events, blank lines and
partial bytes do not restart the clock). A server that stops answering is retried, and the
retry notice names the key.
A `WaitObserver` is told when a request starts waiting and when its first event arrives, so
the transcript can show that the run is alive while the model thinks.
"""

from __future__ import annotations

import email.utils
import json
import os
import platform
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from oiexec.config.environment import RETRY_BASE_DELAY_ENV
from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ProviderError, ProviderUnavailable
from oiexec.core.protocols import RetryCallback
from oiexec.core.redact import redact
from oiexec.core.version import __version__
from oiexec.providers.answers import (
    context_overflow,
    is_context_overflow,
    is_retryable,
    sentence,
    server_error_message,
    status_advice,
)
from oiexec.providers.idle import ConnectionLedger, IdleWatch, is_keepalive

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = [
    "DEFAULT_ORIGINATOR",
    "ORIGINATOR_ENV",
    "STREAM_DISCONNECTED",
    "ProviderHttp",
    "RetryTiming",
    "StreamInterrupted",
    "WaitObserver",
    "build_headers",
    "create_http_client",
    "json_event",
    "parse_retry_after",
    "server_error_message",
    "user_agent",
]

T = TypeVar("T")

#: Prefix Codex uses for every stream that ended without a completed response.
STREAM_DISCONNECTED = "stream disconnected before completion"
#: The `originator` header Codex exec sends, and the variable that replaces it (the Codex
#: SDK sets it to name itself; its tests check the header carries that value).
DEFAULT_ORIGINATOR = "codex_exec"
ORIGINATOR_ENV = "CODEX_INTERNAL_ORIGINATOR_OVERRIDE"
_MAX_EVENT_IN_MESSAGE = 120
#: SSE event names that say the request was taken, not that the model has begun to answer:
#: the wait goes on through them (a reasoning model may think for minutes after
#: `response.created`), as it does through keepalives. Servers that name no events answer
#: with their first one.
_NOT_AN_ANSWER = frozenset(
    {"response.created", "response.in_progress", "response.queued", "message_start"}
)


class WaitObserver(Protocol):
    """Told when the runner is waiting on the model (the human transcript's heartbeat)."""

    def waiting(self) -> None:
        """A request went out and nothing has come back yet (idempotent while waiting)."""
        ...

    def answered(self) -> None:
        """The first event of the answer arrived, or the request ended (idempotent)."""
        ...


class _NoObserver:
    def waiting(self) -> None:
        pass

    def answered(self) -> None:
        pass


@dataclass(frozen=True)
class RetryTiming:
    """Backoff knobs. Defaults are small; tests shrink them further."""

    base_delay: float = 0.2
    max_delay: float = 10.0
    #: A server asking for a longer wait than this is waited on for this long only.
    max_retry_after: float = 60.0
    connect_timeout: float = 10.0
    write_timeout: float = 30.0

    @classmethod
    def from_env(cls) -> RetryTiming:
        """Defaults, with the base delay overridable by `OIEXEC_RETRY_BASE_DELAY_MS`
        (end-to-end tests drive the CLI as a subprocess and cannot pass objects)."""
        raw = os.environ.get(RETRY_BASE_DELAY_ENV, "").strip()
        try:
            return cls(base_delay=max(0.0, float(raw) / 1000)) if raw else cls()
        except ValueError:
            return cls()

    def backoff(self, retry_number: int) -> float:
        """Exponential backoff with ±10 % jitter for the `retry_number`-th retry (1-based)."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** max(0, retry_number - 1))
        return delay * random.uniform(0.9, 1.1)


class StreamInterrupted(Exception):
    """The stream ended (dropped, idle, closed early, garbled, of the wrong shape, or failed
    mid-way with a retryable error) before the response completed. `retry_after` is the wait
    the server asked for, if it named one ("try again in 1.5s")."""

    def __init__(self, detail: str, *, retry_after: float | None = None) -> None:
        self.reason = f"{STREAM_DISCONNECTED}: {detail}"
        self.retry_after = retry_after
        super().__init__(self.reason)


class _RetryableRequest(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def user_agent() -> str:
    """`oiexec/<version> (<OS> <release>; <arch>) python/<version>`: Codex's shape, naming
    this runner, so a provider's logs tell its traffic apart from Codex's own."""
    system = platform.system() or "unknown"
    release = platform.release() or "unknown"
    machine = platform.machine() or "unknown"
    return (
        f"oiexec/{__version__} ({system} {release}; {machine}) python/{platform.python_version()}"
    )


def json_event(data: str) -> Any:
    """The JSON payload of one SSE event. Data that does not parse means the stream was
    garbled or cut (a proxy, a truncated write), so the attempt is retried as a dropped
    stream would be, rather than skipped: a skipped event could silently lose a tool call."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # nested past the parser's depth: garbled too
        data = redact(data)  # before the cut, which could leave part of a secret
        cut = data[:_MAX_EVENT_IN_MESSAGE] + ("…" if len(data) > _MAX_EVENT_IN_MESSAGE else "")
        raise StreamInterrupted(f"the server sent an event that is not JSON: {cut!r}") from None


def build_headers(
    provider: ProviderConfig, api_key: str | None, extra_headers: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Request headers: the runner's identity, provider headers, env-sourced headers, auth,
    then the caller's own."""
    headers: dict[str, str] = {
        "accept": "text/event-stream",
        "content-type": "application/json",
        "user-agent": user_agent(),
        "originator": os.environ.get(ORIGINATOR_ENV, "").strip() or DEFAULT_ORIGINATOR,
    }
    headers.update(provider.http_headers)
    for header, env_var in provider.env_http_headers.items():
        value = os.environ.get(env_var, "").strip()
        if value:
            headers[header] = value
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra_headers or {})
    return headers


def create_http_client(
    provider: ProviderConfig,
    api_key: str | None,
    *,
    extra_headers: Mapping[str, str] | None = None,
    timing: RetryTiming | None = None,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """An httpx client for one provider. The read timeout is the stream idle timeout: it
    bounds a silent wait where no `IdleWatch` can (a transport without a socket)."""
    timing = timing or RetryTiming.from_env()
    idle = provider.stream_idle_timeout_ms / 1000
    timeout = httpx.Timeout(
        connect=min(timing.connect_timeout, idle),
        read=idle,
        write=timing.write_timeout,
        pool=timing.connect_timeout,
    )
    return httpx.Client(
        base_url=provider.base_url,
        params=provider.query_params,
        headers=build_headers(provider, api_key, extra_headers),
        timeout=timeout,
        transport=transport,
        follow_redirects=False,
        # Plain-HTTP providers (local models, gateways on loopback) never use TLS: skip
        # loading the CA bundle (~30 ms). Redirects are not followed, so this cannot leak.
        verify=not provider.base_url.startswith("http://"),
    )


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ProviderHttp:
    """Sends one wire's requests to one provider with retries and hands back parsed streams."""

    def __init__(
        self,
        provider_id: str,
        provider: ProviderConfig,
        api_key: str | None,
        *,
        extra_headers: Mapping[str, str] | None = None,
        timing: RetryTiming | None = None,
        transport: httpx.BaseTransport | None = None,
        wait_observer: WaitObserver | None = None,
    ) -> None:
        self.provider_id = provider_id
        self.provider = provider
        self.timing = timing or RetryTiming.from_env()
        self._api_key = api_key
        self._observer: WaitObserver = wait_observer or _NoObserver()
        self._connections = ConnectionLedger()
        self._client = create_http_client(
            provider, api_key, extra_headers=extra_headers, timing=self.timing, transport=transport
        )

    @property
    def label(self) -> str:
        """How messages name the provider: its display name, else its id."""
        return self.provider.name or self.provider_id

    def close(self) -> None:
        self._client.close()

    def stream(
        self,
        path: str,
        body: dict[str, Any],
        parse: Callable[[Iterator[ServerSentEvent]], T],
        on_retry: RetryCallback,
    ) -> T:
        """POST `body` to `path` and return `parse(events)`, retrying as configured.

        `parse` raises `StreamInterrupted` when the events end before the response completed.
        """
        try:
            return self._attempts(
                self.provider.stream_max_retries,
                StreamInterrupted,
                on_retry,
                lambda: self._stream_once(path, body, parse, on_retry),
            )
        except StreamInterrupted as exc:
            raise ProviderUnavailable(self._clean(exc.reason)) from None
        finally:
            self._observer.answered()

    def _idle_detail(self, missing: str) -> str:
        """How a timed-out wait names its limit, so the user knows which key to raise."""
        ms = self.provider.stream_idle_timeout_ms
        return f"no {missing} for {ms / 1000:g}s, stream_idle_timeout_ms = {ms}"

    def _attempts(
        self,
        max_retries: int,
        retry_on: type[Exception],
        on_retry: RetryCallback,
        once: Callable[[], T],
    ) -> T:
        """`once()`, and up to `max_retries` more after a `retry_on` failure, telling
        `on_retry` before each wait.

        The first attempt runs without tenacity: most runs never retry, and importing it
        costs every run a dozen modules. After a failure, tenacity takes over from the start,
        the first attempt replayed as the failure it was, so numbering and waits are what
        they would have been had it run every attempt."""
        try:
            return once()
        except retry_on as exc:
            if max_retries <= 0:
                raise
            failed: list[Exception] = [exc]

        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

        def replay_then_once() -> T:
            if failed:
                raise failed.pop()
            return once()

        retrying = Retrying(
            stop=stop_after_attempt(max_retries + 1),
            retry=retry_if_exception_type(retry_on),
            wait=self._wait,
            before_sleep=lambda state: on_retry(
                state.attempt_number, max_retries, self._clean(_reason(state))
            ),
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                return replay_then_once()
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _stream_once(
        self,
        path: str,
        body: dict[str, Any],
        parse: Callable[[Iterator[ServerSentEvent]], T],
        on_retry: RetryCallback,
    ) -> T:
        self._observer.waiting()
        response, watch = self._open(path, body, on_retry)
        try:
            return parse(self._events(response, watch))
        finally:
            watch.close()  # first: the watchdog must not outlive the connection's turn
            response.close()

    def _events(self, response: httpx.Response, watch: IdleWatch) -> Iterator[ServerSentEvent]:
        waiting = True
        try:
            for event in EventSource(response).iter_sse():
                if not event.data.strip():
                    continue  # no data: not an event the idle clock counts
                # Any event with data restarts the clock, the wire's own keepalives too (as
                # in Codex): they come from the provider, which is alive, maybe thinking.
                watch.progress()
                if is_keepalive(event):
                    continue  # says nothing to the wire
                # Once per stream: the rest of the events are the answer's deltas.
                if waiting and event.event not in _NOT_AN_ANSWER:
                    self._observer.answered()
                    waiting = False
                yield event
        except (httpx.TransportError, SSEError) as exc:
            # A watchdog that shut the connection down shows as the peer hanging up.
            if isinstance(exc, httpx.ReadTimeout) or watch.fired:
                raise self._idle_interrupt() from None
            raise StreamInterrupted(_describe(exc)) from None
        if watch.fired:  # a body delimited by the connection's close ends "cleanly"
            raise self._idle_interrupt()

    def _idle_interrupt(self) -> StreamInterrupted:
        return StreamInterrupted(f"idle timeout waiting for SSE ({self._idle_detail('event')})")

    def _open(
        self, path: str, body: dict[str, Any], on_retry: RetryCallback
    ) -> tuple[httpx.Response, IdleWatch]:
        try:
            return self._attempts(
                self.provider.request_max_retries,
                _RetryableRequest,
                on_retry,
                lambda: self._send(path, body),
            )
        except _RetryableRequest as exc:
            raise ProviderUnavailable(exc.message) from None

    def _send(self, path: str, body: dict[str, Any]) -> tuple[httpx.Response, IdleWatch]:
        """One request: its event-stream response and the idle clock now guarding it."""
        watch = IdleWatch(self.provider.stream_idle_timeout_ms / 1000, self._connections)
        try:
            return self._send_watched(path, body, watch), watch
        except BaseException:
            watch.close()
            raise

    def _send_watched(self, path: str, body: dict[str, Any], watch: IdleWatch) -> httpx.Response:
        request = self._client.build_request("POST", path, json=body, extensions=watch.extensions)
        url = self._clean(str(request.url.copy_with(query=None)))
        try:
            response = self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.ReadTimeout) or watch.fired:
                # The server took the request and sent no headers within the idle timeout
                # (silent, or only interim 1xx responses, or headers a byte at a time).
                raise _RetryableRequest(
                    f"request to {self.label} at {url} timed out waiting for the response "
                    f"({self._idle_detail('response headers')})"
                ) from None
            if isinstance(exc, httpx.TimeoutException):
                raise _RetryableRequest(
                    f"request to {self.label} at {url} timed out: {_describe(exc)}"
                ) from None
            raise _RetryableRequest(
                f"could not reach {self.label} at {url}: {_describe(exc)}"
            ) from None
        watch.attach(response)
        if response.is_success:
            if "text/event-stream" in response.headers.get("content-type", ""):
                return response
            raw = _read_whole(response, watch)
            shown, _code = server_error_message(raw, self._clean)
            raise ProviderError(
                self._clean(
                    f"{self.label} ({url}) answered {response.headers.get('content-type')!r} "
                    f"instead of an event stream: {sentence(shown)} Check "
                    f"model_providers.{self.provider_id}.base_url: it must be the API root "
                    "(usually ending in /v1), not a web page or a proxy's login page"
                )
            )
        raw = _read_whole(response, watch)
        self._raise_for_status(response, raw, url)
        raise AssertionError("unreachable: _raise_for_status always raises")

    def _raise_for_status(self, response: httpx.Response, raw: bytes, url: str) -> None:
        status = response.status_code
        server_message, code = server_error_message(raw, self._clean)
        message = self._clean(
            f"unexpected status {status} {response.reason_phrase} from {self.label} "
            f"({url}): {server_message}"
        )
        if is_context_overflow(status, code, server_message):
            raise context_overflow(message)
        if is_retryable(status, code):
            raise _RetryableRequest(message, parse_retry_after(response.headers))
        advice = status_advice(status, self.provider_id, self.provider)
        raise ProviderError(f"{sentence(message)} {advice}" if advice else message)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryableRequest | StreamInterrupted) and exc.retry_after is not None:
            return min(exc.retry_after, self.timing.max_retry_after)
        return self.timing.backoff(state.attempt_number)

    def _clean(self, text: str) -> str:
        """Never let the key (or any registered secret) reach a message."""
        if self._api_key:
            text = text.replace(self._api_key, "[REDACTED]")
        return redact(text)


def _reason(state: RetryCallState) -> str:
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, StreamInterrupted):
        return exc.reason
    if isinstance(exc, _RetryableRequest):
        return exc.message
    return str(exc)


def _read_whole(response: httpx.Response, watch: IdleWatch) -> bytes:
    """The body of an answer that is not a stream (an error, a web page), for its message;
    empty if the server stops sending it (the idle watch still guards it)."""
    try:
        return response.read()
    except httpx.HTTPError:
        return b""
    finally:
        watch.close()
        response.close()


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
