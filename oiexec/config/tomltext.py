"""Parsing TOML text a user gave (a config file, a `-c` value) without running out of stack.

`tomllib` parses nested arrays and inline tables recursively, so `x = [[[[…` 10 000 deep is a
`RecursionError`, and it handles a dotted key in time quadratic in its parts (a 10 000-part
key takes seconds). No config needs more than a few levels, so the text is first scanned
(one regular-expression pass: strings and comments are skipped) and refused, naming the line,
when it nests deeper than `MAX_DEPTH`; a layer's data is held to the same bound
(`unusable`), whatever made it (the environment's JSON, `-c`'s dotted keys).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

__all__ = ["MAX_DEPTH", "TomlTooDeep", "loads", "unusable"]

#: Levels of tables, arrays and dotted-key parts a config may nest (Codex's deepest keys,
#: `mcp_servers.<id>.tools.<tool>.approval_mode` or a hook's handler, need a handful).
MAX_DEPTH = 64

# Strings and comments are matched whole so what they contain does not count; then the
# characters that open or close a level, the dot of a dotted key, and what ends a key.
_TOKENS = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}.=,\n]'
)


class TomlTooDeep(ValueError):
    """The text nests deeper than `MAX_DEPTH`; the message names the line."""


def loads(text: str) -> dict[str, Any]:
    """`tomllib.loads(text)`, refusing text nested deeper than `MAX_DEPTH` (`TomlTooDeep`)
    before it is parsed; a `tomllib.TOMLDecodeError` otherwise as tomllib raises it."""
    _scan(text)
    try:
        return tomllib.loads(text)
    except RecursionError:
        # The scan is a bound on what tomllib recurses over; should a construct slip past
        # it, the answer is still an error about the text, not a crash.
        raise TomlTooDeep(f"nested more than {MAX_DEPTH} levels deep") from None


def _scan(text: str) -> None:
    line = 1
    depth = 0
    dots = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if token == "{":
                dots = 0
        elif token in "]}":
            depth = max(depth - 1, 0)
        elif token == ".":
            # Dots since the last `=`, `,`, `{` or line end: the parts of one dotted key
            # (a float or a date in a value has at most one).
            dots += 1
        elif token in "=,\n":
            dots = 0
        if depth > MAX_DEPTH or dots >= MAX_DEPTH:
            raise TomlTooDeep(f"line {line}: nested more than {MAX_DEPTH} levels deep")
        line += token.count("\n")


def unusable(data: Any) -> tuple[list[str], str] | None:
    """The first place in `data` no config can mean, and why: nesting deeper than
    `MAX_DEPTH`, or a NUL character in a key or a string (TOML can write `\\u0000`; no path,
    command, name or environment value can hold one, and a path with one fails deep in the
    run). Found without recursion, so it can be asked of data that would exhaust the stack.
    A list's item is named as its key's `[i]` (`writable_roots[0]`)."""
    pending: list[tuple[Any, list[str], int]] = [(data, [], 0)]
    while pending:
        node, path, depth = pending.pop()
        if depth > MAX_DEPTH:
            # Named by its top-level key: the whole path would be as long as the nesting.
            return path[:1] and [path[0].split("[")[0]], f"nests more than {MAX_DEPTH} levels deep"
        if isinstance(node, str) and "\0" in node:
            return path, "holds a NUL character"
        if isinstance(node, dict):
            for key, child in node.items():
                if "\0" in key:
                    return [*path, key], "holds a NUL character"
                pending.append((child, [*path, key], depth + 1))
        elif isinstance(node, list):
            head, last = path[:-1], path[-1] if path else ""
            pending.extend(
                (child, [*head, f"{last}[{index}]"], depth + 1) for index, child in enumerate(node)
            )
    return None
