"""What a provider's error answer means, on every wire: retry it, give up with advice the user
can act on, or report the request as too long for the model's context window.

Kept apart from the HTTP plumbing (`providers.http`) so the rules for each status and each
vendor's wording sit in one place: an HTTP error status and an error that arrives inside a
200 stream (`response.failed`, a Chat `{"error": …}` chunk, a Messages `error` event) are
judged by the same rules (`stream_error_verdict`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ContextWindowExceeded
from oiexec.core.redact import redact

__all__ = [
    "RETRYABLE_STATUS",
    "context_overflow",
    "is_context_overflow",
    "is_retryable",
    "retry_after_hint",
    "sentence",
    "server_error_message",
    "status_advice",
    "stream_error_verdict",
]

#: Worth retrying besides 5xx: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})
# OpenAI answers 429 for an exhausted quota too (`insufficient_quota`, and per org, project
# or user `insufficient_quota_*`); waiting does not help there.
_QUOTA_CODE = "insufficient_quota"
#: Error codes inside a stream (OpenAI's `code`, Anthropic's error `type`) worth re-sending the
#: request for: a server fault, a rate limit, an overloaded or "slow down" server. Checked
#: before the context-window phrases, as a 429 is: a rate limit "of tokens per min" is not
#: a request too long.
_RETRYABLE_STREAM_CODES = frozenset(
    {
        "server_error",
        "internal_server_error",
        "internal_error",
        "api_error",
        "rate_limit_exceeded",
        "rate_limit_error",
        "rate_limited",
        "server_is_overloaded",
        "overloaded",
        "overloaded_error",
        "slow_down",
        "service_unavailable",
        "timeout",
    }
)
#: Stream error codes that re-sending the same request cannot fix: the request itself, the
#: key, the account or a policy is at fault. (Codex fails at once on quota, usage-plan,
#: invalid-prompt and policy codes; the others are the same faults in other vendors' words.)
_FINAL_STREAM_CODES = frozenset(
    {
        "usage_not_included",
        "invalid_prompt",
        "invalid_request",
        "invalid_request_error",
        "invalid_api_key",
        "authentication_error",
        "permission_error",
        "permission_denied",
        "not_found_error",
        "model_not_found",
        "billing_error",
        "cyber_policy",
        "content_filter",
        "content_policy_violation",
    }
)
#: "Please try again in 1.5s" / "in 250ms" / "in 20 seconds": the wait a rate-limit message
#: asks for, as Codex reads it from a `response.failed` error.
_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|secs?|seconds?)\b", re.IGNORECASE)
_MAX_BODY_IN_MESSAGE = 500

#: Error codes meaning "the request is longer than the model's window" (OpenAI's on the
#: Responses and Chat wires; compatible servers copy it).
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
#: How servers word it when they give no such code: Anthropic's `prompt is too long: N tokens
#: > M maximum`, vLLM's and DeepSeek's `maximum context length is N tokens`, and the generic
#: phrasings of gateways in front of them. Compared in lower case.
_CONTEXT_PHRASES = (
    "prompt is too long",
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "exceeds the context window",
    "exceeds the model's context window",
    "input is too long",
)


def server_error_message(
    body: bytes, clean: Callable[[str], str] = redact
) -> tuple[str, str | None]:
    """The server's own error message (and code) from an OpenAI-style, Anthropic-style or
    plain body, passed through `clean` (secrets masked) and then cut to a length fit for one
    line of a log: cut first, a secret the server echoed would leave a fragment unmasked."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        return (clean(text)[:_MAX_BODY_IN_MESSAGE] or "(empty body)"), None
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)
        code = error.get("code") or error.get("type")
        return clean(str(message))[:_MAX_BODY_IN_MESSAGE], (clean(str(code)) if code else None)
    return clean(str(error))[:_MAX_BODY_IN_MESSAGE], None


def is_context_overflow(status: int | None, code: str | None, message: str) -> bool:
    """Whether an error answer says the request does not fit the model's context window:
    HTTP 413, or a client error (or an error inside a stream, `status` None) with a
    context-length code or one of the known phrasings."""
    if status == 413:
        return True
    if status is not None and (status >= 500 or status in RETRYABLE_STATUS):
        return False  # a server or rate-limit error that mentions tokens is still transient
    if code is not None and code.lower() in _CONTEXT_CODES:
        return True
    lowered = message.lower()
    return any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def is_retryable(status: int, code: str | None) -> bool:
    """Timeouts, conflicts, rate limits and server errors are retried; a spent quota is not."""
    return (status in RETRYABLE_STATUS or status >= 500) and not _is_quota(code)


def stream_error_verdict(
    code: str | None, message: str
) -> Literal["retry", "context_overflow", "fail"]:
    """What an error that arrived inside a 200 stream means: `retry` (re-send the request
    within `stream_max_retries`), `context_overflow` (compact, or fail saying so) or `fail`.

    As Codex does with `response.failed`, a failure it cannot classify (no code, or one no
    rule names) is retried: it is most often a fault of some hop on the way, and the retry
    budget bounds it. A code that is an HTTP status (gateways send `"code": 502`) is judged
    as that status would be."""
    lowered = (code or "").strip().lower()
    if lowered.isdigit():
        status = int(lowered)
        if is_context_overflow(status, None, message):
            return "context_overflow"
        return "retry" if is_retryable(status, None) else "fail"
    if lowered in _RETRYABLE_STREAM_CODES:
        return "retry"
    if is_context_overflow(None, lowered or None, message):
        return "context_overflow"
    if _is_quota(lowered) or lowered in _FINAL_STREAM_CODES:
        return "fail"
    return "retry"


def retry_after_hint(message: str) -> float | None:
    """Seconds a stream error's message asks the client to wait ("try again in 1.5s"), or
    None. The caller caps it as it caps an HTTP `Retry-After`."""
    found = _TRY_AGAIN.search(message)
    if found is None:
        return None
    value = float(found.group(1))
    return value / 1000 if found.group(2).lower() == "ms" else value


def _is_quota(code: str | None) -> bool:
    return code is not None and code.lower().startswith(_QUOTA_CODE)


def status_advice(status: int, provider_id: str, provider: ProviderConfig) -> str | None:
    """What the user can do about a status that is not retried, or None when the server's
    own message is all there is to say."""
    if status in (401, 403):
        env_key = provider.env_key
        if env_key:
            return f"Check the API key in ${env_key}."
        return "This provider sends no API key; set `env_key` for it if it needs one."
    if status == 404:
        return (
            f"Check the model name (-m) and model_providers.{provider_id}.base_url: the wire's "
            "path (/responses, /chat/completions or /messages) is added to it, so it usually "
            "ends in /v1."
        )
    return None


def context_overflow(detail: str) -> ContextWindowExceeded:
    """The error for a request the provider refused as too long: the loop compacts and
    retries on it; if it still reaches the user, the message says what helps."""
    return ContextWindowExceeded(
        f"{sentence(detail)} The conversation does not fit the model's context window: set "
        "model_context_window to the model's real window so older turns are compacted in "
        "time, or start a new session"
    )


def sentence(text: str) -> str:
    """`text` ending in exactly one full stop, for advice to follow it."""
    return text.rstrip().rstrip(".") + "."
