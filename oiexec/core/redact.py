"""Keeps secrets out of everything the runner writes (events, sessions, logs, reports).

Secret values are registered once (API keys, bearer tokens, secret-looking env vars) and every
sink passes its text through `redact` before writing. Text is redacted *before* it is cut to
a length (`redact` first, then slice): a cut through a secret would leave a fragment that no
longer matches.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel

#: Names of environment variables that look like they hold credentials (case-insensitive).
SECRET_NAME_GLOBS: tuple[str, ...] = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")

_MIN_SECRET_LEN = 6
MASK = "[REDACTED]"
_lock = threading.Lock()
_secrets: set[str] = set()
#: Every registered form, longest first (a form inside a longer one must not be masked first
#: and leave the rest of the longer one behind). Rebuilt on register, read without the lock.
_ordered: tuple[str, ...] = ()
_URLSAFE = str.maketrans("+/", "-_")


def encoded_forms(value: str) -> set[str]:
    """The forms a secret is masked in besides itself: reversed, hex (lower and upper case)
    and base64 (standard and URL-safe alphabets, padded or not).

    Inside a longer base64 stream a secret starts at one of three bit alignments (the bytes
    before it, modulo 3), and each alignment encodes it to different characters. For each,
    the characters that depend on the secret's bytes alone are a stable substring, whatever
    surrounds it; those three substrings are what is matched. At most the two characters at
    either end, which mix in the neighbouring bytes, stay unmasked: too few to carry more
    than a byte or two of the secret."""
    raw = value.encode()
    forms = {value[::-1], raw.hex(), raw.hex().upper()}
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        first = -(-8 * offset // 6)  # the first character with no bit of the leading bytes
        end = 8 * (offset + len(raw)) // 6  # past the last character with only secret bits
        stable = encoded[first:end]
        forms.add(stable)
        forms.add(stable.translate(_URLSAFE))
    return {form for form in forms if len(form) >= _MIN_SECRET_LEN}


def register_secret(value: str | None) -> None:
    """Remember a value that must never be written out. Short values are ignored: masking
    them would garble ordinary text. Encoded forms are masked too (`encoded_forms`); this is
    a last line only: commands cannot read the runner's secrets in the first place."""
    global _ordered
    if not value or len(value) < _MIN_SECRET_LEN:
        return
    forms = {value, *encoded_forms(value)}
    with _lock:
        if forms <= _secrets:
            return
        _secrets.update(forms)
        _ordered = tuple(sorted(_secrets, key=len, reverse=True))


def longest_form() -> int:
    """The length in UTF-8 bytes of the longest registered form (0 with none): how much of a
    text beyond a cut point must be seen to mask a secret the cut goes through."""
    forms = _ordered
    return len(forms[0].encode()) if forms else 0


def redact(text: str) -> str:
    """`text` with every registered secret, in every registered form, replaced by the mask.

    It runs on every chunk of command output, so it stays a handful of substring searches
    (`in` is a vectorised scan; a compiled alternation of the same forms measured ~9x slower
    on 1 MiB): the spans are only looked for when a form occurs.

    Every occurrence of every form is masked, overlapping ones as one span: replacing form
    after form would let the first replacement cut into a second form's match and leave a
    character of it behind (a repetitive secret's base64 matches at two alignments that
    overlap)."""
    found = [secret for secret in _ordered if secret in text]
    if not found:
        return text
    parts: list[str] = []
    done = 0
    for start, end in _spans(text, found):
        parts += (text[done:start], MASK)
        done = end
    parts.append(text[done:])
    return "".join(parts)


def _spans(text: str, forms: list[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for form in forms:
        at = text.find(form)
        while at >= 0:
            spans.append((at, at + len(form)))
            at = text.find(form, at + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def redact_value(value: Any) -> Any:
    """`value` with `redact` applied to every string in it: through dicts (values only),
    lists, tuples and pydantic models (a copy; the original is left as it was)."""
    if not _ordered:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if type(value) is tuple:
        return tuple(redact_value(item) for item in value)
    if isinstance(value, BaseModel):
        changed = {
            name: new
            for name in type(value).model_fields
            if (new := redact_value(old := getattr(value, name))) != old
        }
        return value.model_copy(update=changed) if changed else value
    return value


def clear_secrets() -> None:
    """For tests that run several configurations in one process."""
    global _ordered
    with _lock:
        _secrets.clear()
        _ordered = ()


def matches_any(name: str, globs: Iterable[str]) -> bool:
    """Case-insensitive glob match of a variable name."""
    upper = name.upper()
    return any(fnmatchcase(upper, glob.upper()) for glob in globs)


def looks_secret(name: str, provider_env_key: str | None = None) -> bool:
    """Whether an environment variable probably holds a credential."""
    if provider_env_key and name.upper() == provider_env_key.upper():
        return True
    return matches_any(name, SECRET_NAME_GLOBS)
