"""What a provider's error answer means, on every wire: retry it, give up with advice the user
can act on, or report the request as too long for the model's context window.

Kept apart from the HTTP plumbing (`providers.http`) so the rules for each status and each
vendor's wording sit in one place, and the stream parsers can apply the same context-window
rule to an error that arrives inside a 200 stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ContextWindowExceeded
from oiexec.core.redact import redact

__all__ = [
    "RETRYABLE_STATUS",
    "context_overflow",
    "is_context_overflow",
    "is_retryable",
    "sentence",
    "server_error_message",
    "status_advice",
]

#: Worth retrying besides 5xx: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})
# OpenAI answers 429 for an exhausted quota too; waiting does not help there.
_NON_RETRYABLE_CODES = frozenset({"insufficient_quota"})
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
    return (status in RETRYABLE_STATUS or status >= 500) and code not in _NON_RETRYABLE_CODES


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
