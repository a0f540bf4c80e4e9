"""Glob patterns as ripgrep and fast-glob read them: `*`, `?`, `[...]`, `{a,b}` and `**`."""

from __future__ import annotations

import re
from functools import lru_cache


def expand_braces(pattern: str) -> list[str]:
    """`a.{js,ts}` -> [`a.js`, `a.ts`]; nested braces expand too, unbalanced ones stay."""
    depth = 0
    start = -1
    for i, char in enumerate(pattern):
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                head, body, tail = pattern[:start], pattern[start + 1 : i], pattern[i + 1 :]
                return [
                    expanded
                    for option in _split_top(body)
                    for expanded in expand_braces(head + option + tail)
                ]
    return [pattern]


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += (char == "{") - (char == "}")
        current += char
    parts.append(current)
    return parts


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out += "(?:/.*)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out += "[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]"
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z", re.DOTALL)


def glob_match(pattern: str, rel: str, *, basename_anywhere: bool = True) -> bool:
    """Whether the POSIX relative path `rel` matches `pattern`.

    With `basename_anywhere` (ripgrep's rule), a pattern without `/` matches the file name
    at any depth; otherwise it is anchored at the root like a shell glob.
    """
    for option in expand_braces(pattern.removeprefix("./")):
        subject = rel
        if basename_anywhere and "/" not in option:
            subject = rel.rsplit("/", 1)[-1]
        if _compile(option.lstrip("/")).match(subject):
            return True
    return False
