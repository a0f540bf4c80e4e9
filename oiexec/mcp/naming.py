"""The names the model sees for MCP tools: `mcp__<server>__<tool>`, as Codex builds them.

Codex keeps only `[A-Za-z0-9_-]` (anything else becomes `_`) and caps a name at 64 bytes, the
limit the model APIs enforce; a name that is too long, or that two tools would share after
sanitising, is cut and given `_` plus the first 12 hex digits of a SHA-1 of the raw
identity, so every advertised name is unique and stable across runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_TOOL_NAME_LENGTH", "qualified_names", "sanitize"]

MAX_TOOL_NAME_LENGTH = 64
_HASH_LEN = 12
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def _suffix(identity: str) -> str:
    return "_" + hashlib.sha1(identity.encode(), usedforsecurity=False).hexdigest()[:_HASH_LEN]


def _fit(namespace: str, tool: str, identity: str) -> str:
    suffix = _suffix(identity)
    room = MAX_TOOL_NAME_LENGTH - len(namespace)
    if room >= len(suffix):
        return namespace + tool[: room - len(suffix)] + suffix
    return namespace[: MAX_TOOL_NAME_LENGTH - len(suffix)] + suffix


def qualified_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Maps each raw (server, tool) to the unique name the model calls it by."""
    used: set[str] = set()
    names: dict[tuple[str, str], str] = {}
    for server, tool in sorted(set(pairs)):
        namespace = f"mcp__{sanitize(server)}__"
        name = namespace + sanitize(tool)
        identity = f"{server}\0{tool}"
        attempt = 0
        while len(name) > MAX_TOOL_NAME_LENGTH or name in used:
            name = _fit(
                namespace, sanitize(tool), identity if not attempt else f"{identity}\0{attempt}"
            )
            attempt += 1
        used.add(name)
        names[(server, tool)] = name
    return names
