"""The HTTP side shared by every wire: client factory, error mapping, retries, SSE streaming.

Two retry budgets, as in Codex: `request_max_retries` covers a request that fails before the
stream starts (connection errors, 408/409/429/5xx); `stream_max_retries` covers a stream that
drops or goes idle after a 200, by re-sending the whole request. Wires return only complete
responses, so a retried stream never yields anything twice.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from oiexec import __version__
from oiexec.config.environment import RETRY_BASE_DELAY_ENV
from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ProviderError
from oiexec.core.protocols import RetryCallback
from oiexec.core.redact import redact

__all__ = [
    "STREAM_DISCONNECTED",
    "ProviderHttp",
    "RetryTiming",
    "StreamInterrupted",
    "build_headers",
    "create_http_client",
    "parse_retry_after",
    "server_error_message",
]

T = TypeVar("T")

#: Prefix Codex uses for every stream that ended without a completed response.
STREAM_DISCONNECTED = "stream disconnected before completion"
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# OpenAI answers 429 for an exhausted quota too; waiting does not help there.
_NON_RETRYABLE_CODES = frozenset({"insufficient_quota"})
_MAX_BODY_IN_MESSAGE = 500


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
    """The stream ended (dropped, idle, closed early) before the response completed."""

    def __init__(self, detail: str) -> None:
        self.reason = f"{STREAM_DISCONNECTED}: {detail}"
        super().__init__(self.reason)


class _RetryableRequest(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def build_headers(
    provider: ProviderConfig, api_key: str | None, extra_headers: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Request headers: provider headers, env-sourced headers, auth, then the runner's own."""
    headers: dict[str, str] = {
        "accept": "text/event-stream",
        "content-type": "application/json",
        "user-agent": f"oiexec/{__version__}",
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
    bounds every wait for the next bytes, so a stalled stream fails instead of hanging."""
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


def server_error_message(body: bytes) -> tuple[str, str | None]:
    """The server's own error message (and code) from an OpenAI-style or plain body."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        return (text[:_MAX_BODY_IN_MESSAGE] or "(empty body)"), None
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)
        code = error.get("code") or error.get("type")
        return str(message)[:_MAX_BODY_IN_MESSAGE], (str(code) if code else None)
    return str(error)[:_MAX_BODY_IN_MESSAGE], None


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
    ) -> None:
        self.provider_id = provider_id
        self.provider = provider
        self.timing = timing or RetryTiming.from_env()
        self._api_key = api_key
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
        retrying = self._retrying(self.provider.stream_max_retries, StreamInterrupted, on_retry)
        try:
            for attempt in retrying:
                with attempt:
                    return self._stream_once(path, body, parse, on_retry)
        except StreamInterrupted as exc:
            raise ProviderError(self._clean(exc.reason)) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _retrying(
        self, max_retries: int, retry_on: type[Exception], on_retry: RetryCallback
    ) -> Retrying:
        """One retry budget: `max_retries` after the first attempt, for `retry_on` only,
        telling `on_retry` before each wait."""
        return Retrying(
            stop=stop_after_attempt(max_retries + 1),
            retry=retry_if_exception_type(retry_on),
            wait=self._wait,
            before_sleep=lambda state: on_retry(
                state.attempt_number, max_retries, self._clean(_reason(state))
            ),
            reraise=True,
        )

    def _stream_once(
        self,
        path: str,
        body: dict[str, Any],
        parse: Callable[[Iterator[ServerSentEvent]], T],
        on_retry: RetryCallback,
    ) -> T:
        response = self._open(path, body, on_retry)
        try:
            return parse(self._events(response))
        finally:
            response.close()

    def _events(self, response: httpx.Response) -> Iterator[ServerSentEvent]:
        try:
            yield from EventSource(response).iter_sse()
        except httpx.ReadTimeout:
            raise StreamInterrupted("idle timeout waiting for SSE") from None
        except (httpx.TransportError, SSEError) as exc:
            raise StreamInterrupted(_describe(exc)) from None

    def _open(self, path: str, body: dict[str, Any], on_retry: RetryCallback) -> httpx.Response:
        retrying = self._retrying(self.provider.request_max_retries, _RetryableRequest, on_retry)
        try:
            for attempt in retrying:
                with attempt:
                    return self._send(path, body)
        except _RetryableRequest as exc:
            raise ProviderError(exc.message) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _send(self, path: str, body: dict[str, Any]) -> httpx.Response:
        request = self._client.build_request("POST", path, json=body)
        url = self._clean(str(request.url.copy_with(query=None)))
        try:
            response = self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise _RetryableRequest(
                f"request to {self.label} at {url} timed out: {_describe(exc)}"
            ) from None
        except httpx.TransportError as exc:
            raise _RetryableRequest(
                f"could not reach {self.label} at {url}: {_describe(exc)}"
            ) from None
        if response.is_success:
            if "text/event-stream" in response.headers.get("content-type", ""):
                return response
            raw = response.read()
            response.close()
            raise ProviderError(
                self._clean(
                    f"{self.label} ({url}) answered {response.headers.get('content-type')!r} "
                    f"instead of an event stream: {server_error_message(raw)[0]}"
                )
            )
        try:
            raw = response.read()
        except httpx.HTTPError:
            raw = b""
        finally:
            response.close()
        self._raise_for_status(response, raw, url)
        raise AssertionError("unreachable: _raise_for_status always raises")

    def _raise_for_status(self, response: httpx.Response, raw: bytes, url: str) -> None:
        status = response.status_code
        server_message, code = server_error_message(raw)
        message = self._clean(
            f"unexpected status {status} {response.reason_phrase} from {self.label} "
            f"({url}): {server_message}"
        )
        if status in (401, 403):
            env_key = self.provider.env_key
            advice = (
                f"Check the API key in ${env_key}."
                if env_key
                else "This provider sends no API key; set `env_key` for it if it needs one."
            )
            raise ProviderError(f"{message}. {advice}")
        if (status in _RETRYABLE_STATUS or status >= 500) and code not in _NON_RETRYABLE_CODES:
            raise _RetryableRequest(message, parse_retry_after(response.headers))
        raise ProviderError(message)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryableRequest) and exc.retry_after is not None:
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


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class WireClient:
    """What every wire client shares: one `ProviderHttp` and closing it. Subclasses add
    `respond`, which is where the wires differ."""

    #: How errors name the provider when the caller gives no id.
    default_provider_id = "provider"

    def __init__(
        self,
        provider: ProviderConfig,
        api_key: str | None,
        *,
        provider_id: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timing: RetryTiming | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = ProviderHttp(
            provider_id or self.default_provider_id,
            provider,
            api_key,
            extra_headers=extra_headers,
            timing=timing,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()
