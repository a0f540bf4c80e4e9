"""HTTP headers a config or the environment gives: checked where they are read, not in httpx.

httpx encodes a header as ASCII, so `X-Team = "Zürich"` or a key with a non-UTF-8 byte in
an environment variable ended the run in a `UnicodeEncodeError` deep in the request; a line
break would split the request. A header's name must be an HTTP token and its value visible
ASCII, spaces and tabs (RFC 9110); anything else is a config error naming the header.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["EnvHeaderMap", "HeaderMap", "header_problem", "sendable"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\t\x20-\x7e]*")


def header_problem(name: str, value: str | None) -> str | None:
    """What makes `name: value` unsendable, in words; None when it can be sent. `value`
    None checks the name alone."""
    if not _TOKEN.fullmatch(name):
        return (
            f"header name {name!r} is not an HTTP header name (letters, digits and "
            "!#$%&'*+-.^_`|~ only)"
        )
    if value is not None and not _VALUE.fullmatch(value):
        bad = next(char for char in value if not _VALUE.fullmatch(char))
        return (
            f"header `{name}` has a value with {bad!r}: a header value is ASCII text "
            "(printable characters, spaces and tabs) on one line"
        )
    return None


def sendable(value: str) -> bool:
    """Whether `value` can be sent as (part of) a header value."""
    return bool(_VALUE.fullmatch(value))


def _check_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem:
            raise ValueError(problem)
    return headers


def _check_names(headers: dict[str, str]) -> dict[str, str]:
    for name in headers:
        problem = header_problem(name, None)
        if problem:
            raise ValueError(problem)
    return headers


#: `http_headers`: header name -> value, both sendable.
HeaderMap = Annotated[dict[str, str], AfterValidator(_check_headers)]
#: `env_http_headers`: header name -> variable (its value is checked when it is read).
EnvHeaderMap = Annotated[dict[str, str], AfterValidator(_check_names)]
