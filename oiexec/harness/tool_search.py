"""`tool_search`: MCP tools deferred behind a search, as Codex offers them.

When a run has many MCP tools (Codex 0.169: 100 or more, or always with the feature
`tool_search_always_defer_mcp_tools`), the first request carries this one tool instead of
them. A search ranks the deferred tools with BM25 over the same metadata Codex indexes (the
qualified name, the name with spaces, the server, the description, the parameter names and
their descriptions) and returns the best matches; from the next request on those tools are
offered and callable.

What a search loaded is read back from the history (the `tool_search` outputs), never kept
aside: a resumed session and a rollout replay offer the same tools again, and a compaction
that summarised the search away simply leaves the model to search again.

Codex sends this as the Responses API's own `tool_search` tool (`tool_search_call` /
`tool_search_output` items and namespaced function calls); here it is a function tool with
the same parameters, so it works on every wire and through every provider.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.protocols import Tool
from oiexec.core.types import HistoryItem, ToolCall, ToolOutput, ToolSpec

__all__ = ["SEARCH_TOOL_NAME", "ToolSearch", "loaded_tool_names", "server_of"]

SEARCH_TOOL_NAME = "tool_search"

# Okapi BM25's usual constants (those of the `bm25` crate Codex ranks with).
_K1 = 1.2
_B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")


class ToolSearch:
    """The `tool_search` tool over a run's deferred MCP tools."""

    def __init__(self, tools: Sequence[Tool], *, default_limit: int) -> None:
        self._tools = list(tools)
        self._default_limit = default_limit
        self._index = _Bm25([_search_text(tool.spec) for tool in self._tools])
        self._spec = ToolSpec(
            name=SEARCH_TOOL_NAME,
            description=_description(self._tools, default_limit),
            parameters={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Words describing the capability you need.",
                    },
                    "limit": {
                        "type": "number",
                        "description": (
                            f"How many tools to return at most (default {default_limit})."
                        ),
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def deferred_names(self) -> frozenset[str]:
        return frozenset(tool.spec.name for tool in self._tools)

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        query = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not query.strip():
            return ToolOutput(
                call_id=call.call_id,
                output="tool_search needs a non-empty string `query`.",
                is_error=True,
            )
        limit = _limit(arguments.get("limit"), self._default_limit)
        found = [self._tools[i] for i in self._index.top(query, limit)]
        tools = [{"name": tool.spec.name, "description": tool.spec.description} for tool in found]
        return ToolOutput(call_id=call.call_id, output=json.dumps({"tools": tools}))


def loaded_tool_names(history: Iterable[HistoryItem]) -> set[str]:
    """The tools earlier `tool_search` calls in `history` returned (and so made available)."""
    search_calls = {
        item.call_id
        for item in history
        if isinstance(item, ToolCall) and item.name == SEARCH_TOOL_NAME
    }
    names: set[str] = set()
    if not search_calls:
        return names
    for item in history:
        if isinstance(item, ToolOutput) and item.call_id in search_calls:
            names.update(_names_in(item.output))
    return names


def _names_in(output: str) -> Iterator[str]:
    try:
        value = json.loads(output)
    except ValueError:
        return
    tools = value.get("tools") if isinstance(value, dict) else None
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            yield tool["name"]


def _limit(value: Any, default: int) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 1:
        return int(value)
    return default


def _description(tools: Sequence[Tool], default_limit: int) -> str:
    servers = sorted({server for tool in tools if (server := server_of(tool))})
    return (
        "Finds MCP tools by what they do. The tools of the MCP servers "
        f"{', '.join(servers)} are not listed until a search returns them; the tools a "
        "search returns can be called from your next step on, for the rest of the session, "
        "and later searches add to them. The query is matched against each tool's name, "
        "server, description and parameter names. Start with a short query of a few words; "
        f"`limit` caps the results (default {default_limit}). Tools that are already listed "
        "need no search."
    )


def server_of(tool: Tool) -> str:
    """The MCP server a tool comes from (its `server`, else the middle of its
    `mcp__<server>__<tool>` name); "" for tools of no one server (the resource tools)."""
    server = getattr(tool, "server", None)
    if isinstance(server, str) and server:
        return server
    parts = tool.spec.name.split("__")
    return parts[1] if len(parts) >= 3 and parts[0] == "mcp" else ""


def _search_text(spec: ToolSpec) -> str:
    parts = [spec.name, spec.name.replace("_", " "), spec.description]
    _schema_text(spec.parameters or {}, parts)
    return " ".join(part for part in parts if part)


def _schema_text(schema: Any, parts: list[str]) -> None:
    if not isinstance(schema, dict):
        return
    description = schema.get("description")
    if isinstance(description, str):
        parts.append(description)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            parts.append(str(name))
            _schema_text(sub, parts)
    _schema_text(schema.get("items"), parts)
    for variant in schema.get("anyOf") or []:
        _schema_text(variant, parts)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class _Bm25:
    """Okapi BM25 over a few hundred short documents. Written out here (thirty lines) rather
    than a dependency: the ranking libraries on PyPI pull numpy into a CLI for this."""

    def __init__(self, documents: Sequence[str]) -> None:
        self._docs = [Counter(_tokens(doc)) for doc in documents]
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.keys())
        total = len(self._docs)
        self._idf = {
            term: math.log(1 + (total - count + 0.5) / (count + 0.5))
            for term, count in frequency.items()
        }

    def top(self, query: str, limit: int) -> list[int]:
        terms = _tokens(query)
        scored: list[tuple[float, int]] = []
        for index, doc in enumerate(self._docs):
            score = 0.0
            norm = _K1 * (1 - _B + _B * self._lengths[index] / (self._average or 1.0))
            for term in terms:
                count = doc.get(term, 0)
                if count:
                    score += self._idf[term] * count * (_K1 + 1) / (count + norm)
            if score > 0:
                scored.append((score, index))
        # Ties keep the tools' own order, so a search is reproducible.
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [index for _score, index in scored[:limit]]
