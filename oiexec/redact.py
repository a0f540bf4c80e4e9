"""Keeps secrets out of everything the runner writes (events, sessions, logs, reports).

Secret values are registered once (API keys, bearer tokens, secret-looking env vars) and every
sink passes its text through `redact` before writing.
"""

from __future__ import annotations

import threading

_MIN_SECRET_LEN = 6
_MASK = "[REDACTED]"
_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a value that must never be written out. Short values are ignored: masking
    them would garble ordinary text."""
    if value and len(value) >= _MIN_SECRET_LEN:
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    if not _secrets:
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, _MASK)
    return text


def clear_secrets() -> None:
    """For tests that run several configurations in one process."""
    with _lock:
        _secrets.clear()
