"""Keeps secrets out of everything the runner writes (events, sessions, logs, reports).

Secret values are registered once (API keys, bearer tokens, secret-looking env vars) and every
sink passes its text through `redact` before writing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from fnmatch import fnmatchcase

#: Names of environment variables that look like they hold credentials (case-insensitive).
SECRET_NAME_GLOBS: tuple[str, ...] = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")

_MIN_SECRET_LEN = 6
_MASK = "[REDACTED]"
_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a value that must never be written out. Short values are ignored: masking
    them would garble ordinary text. Simple disguises (reversed, hex) are masked too; this is
    a last line only: commands cannot read the runner's secrets in the first place."""
    if value and len(value) >= _MIN_SECRET_LEN:
        raw = value.encode()
        with _lock:
            _secrets.update({value, value[::-1], raw.hex(), raw.hex().upper()})


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


def matches_any(name: str, globs: Iterable[str]) -> bool:
    """Case-insensitive glob match of a variable name."""
    upper = name.upper()
    return any(fnmatchcase(upper, glob.upper()) for glob in globs)


def looks_secret(name: str, provider_env_key: str | None = None) -> bool:
    """Whether an environment variable probably holds a credential."""
    if provider_env_key and name.upper() == provider_env_key.upper():
        return True
    return matches_any(name, SECRET_NAME_GLOBS)
