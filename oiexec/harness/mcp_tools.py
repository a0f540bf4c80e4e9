"""How a harness offers the run's MCP tools to the model, as its product does.

Every function-calling harness names them `mcp__<server>__<tool>` (Codex's rule, which
Claude Code and Qwen Code share) and gives the server's description and input schema; the
product differences are data in the manifest's `[mcp]` table:

- native (Codex): the schema gets `properties: {}` when the server left it out (OpenAI
  models require it; Codex inserts it too); with many tools they are deferred behind
  `tool_search` (harness/tool_search.py), and a deferred tool is callable only once a search
  returned it, as in Codex (whose deferred tools are reachable only through the namespace a
  search hands out; a bare call is an unsupported call).
- claude-code: descriptions are cut at 2048 characters and marked `… [truncated]`, as
  Claude Code does since 2.1.84.
- qwen-code: JSON-Schema keywords the product strips are removed.

Text-action harnesses (mini-swe-agent-text's fenced blocks, SWE-agent's commands) have no
function calling, so MCP tools cannot be offered there: `unavailable_warning` says so once
per run, naming the harness and the servers, instead of dropping them silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.protocols import Tool
from oiexec.core.types import HistoryItem, ToolCall, ToolOutput, ToolSpec
from oiexec.harness.spec import HarnessSpec
from oiexec.harness.tool_search import (
    SEARCH_TOOL_NAME,
    ToolSearch,
    loaded_tool_names,
    server_of,
)

__all__ = [
    "McpOffer",
    "advertise_mcp_tools",
    "can_offer_mcp_tools",
    "offer_mcp_tools",
    "unavailable_warning",
]

#: Schema members whose values map names to schemas (the names are not keywords).
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_CUT_MARK = "… [truncated]"


def can_offer_mcp_tools(spec: HarnessSpec) -> bool:
    """Only harnesses that advertise function tools on the wire can offer MCP tools (classic
    does, beside its markdown code blocks; fenced-block and command harnesses do not)."""
    return spec.advertise_tools and spec.action_format in ("function_calls", "markdown_code")


def unavailable_warning(spec: HarnessSpec, tools: Sequence[Tool]) -> str | None:
    """The warning for a run whose harness cannot offer its MCP tools, or None."""
    if not tools or can_offer_mcp_tools(spec):
        return None
    servers = sorted({server for tool in tools if (server := server_of(tool))})
    if not servers:
        return None
    names = ", ".join(f"`{server}`" for server in servers)
    return (
        f"harness `{spec.id}` has no function calling, so the tools of MCP "
        f"server{'s' if len(servers) != 1 else ''} {names} are not offered to the model; use "
        "a function-calling harness (e.g. `-c harness=native`) to use them"
    )


def advertise_mcp_tools(spec: HarnessSpec, tools: Sequence[Tool]) -> list[Tool]:
    """`tools` as the harness's product offers them; none when it cannot."""
    if not can_offer_mcp_tools(spec):
        return []
    return [_Advertised(tool, _product_spec(spec, tool.spec), server_of(tool)) for tool in tools]


class McpOffer:
    """Which MCP tools a request offers: all of them, or (deferred) the search tool plus
    the tools earlier searches returned. A deferred tool the last request did not offer
    refuses a call: the model has not seen its schema, and Codex would not run it either."""

    def __init__(self, spec: HarnessSpec, tools: Sequence[Tool], *, always_defer: bool) -> None:
        threshold = spec.mcp.defer_at
        defer = bool(tools) and threshold is not None and (always_defer or len(tools) >= threshold)
        self.search: ToolSearch | None = (
            ToolSearch(tools, default_limit=spec.mcp.search_limit) if defer else None
        )
        #: The deferred tools the last request left out (all of them before the first).
        self._hidden = self.search.deferred_names if self.search is not None else frozenset()

    def tools(self, advertised: Sequence[Tool]) -> list[Tool]:
        """Every tool the loop may dispatch to, the deferred ones gated by this offer."""
        if self.search is None:
            return list(advertised)
        deferred = self.search.deferred_names
        gated = [
            dataclasses.replace(tool, offer=self)
            if isinstance(tool, _Advertised) and tool.spec.name in deferred
            else tool
            for tool in advertised
        ]
        return [*gated, self.search]

    def offered(
        self, specs: Sequence[ToolSpec], history: Sequence[HistoryItem]
    ) -> tuple[ToolSpec, ...]:
        if self.search is None:
            return tuple(specs)
        # Read back from the history each time, so a resumed session (or a compaction that
        # summarised the search away) offers exactly what its conversation loaded.
        self._hidden = self.search.deferred_names - loaded_tool_names(history)
        return tuple(spec for spec in specs if spec.name not in self._hidden)

    def hides(self, name: str) -> bool:
        return name in self._hidden


def offer_mcp_tools(
    spec: HarnessSpec, tools: Sequence[Tool], *, always_defer: bool = False
) -> tuple[list[Tool], McpOffer]:
    """The advertised tools (search tool included) and what each request offers of them."""
    advertised = advertise_mcp_tools(spec, tools)
    # Only the servers' own tools are deferred; the resource tools stay listed, as in Codex.
    deferrable = [tool for tool in advertised if tool.spec.name.startswith("mcp__")]
    offer = McpOffer(spec, deferrable, always_defer=always_defer)
    return offer.tools(advertised), offer


@dataclass(frozen=True, eq=False)  # compared and hashed by identity, as any tool
class _Advertised:
    """An MCP tool under its product's spec; calls go to the tool itself."""

    tool: Tool
    spec: ToolSpec
    #: The server it comes from, which `tool_search` and the warnings name.
    server: str
    #: Set for a deferred tool: the offer that says whether the model may call it yet.
    offer: McpOffer | None = None

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        if self.offer is not None and self.offer.hides(self.spec.name):
            return ToolOutput(
                call_id=call.call_id,
                call_type=call.call_type,
                output=(
                    f"unsupported call: `{self.spec.name}` is not loaded. Call "
                    f"`{SEARCH_TOOL_NAME}` with words describing what you need; the tools it "
                    "returns can be called from your next step on."
                ),
                is_error=True,
            )
        return self.tool.run(call, ctx)


def _product_spec(spec: HarnessSpec, tool: ToolSpec) -> ToolSpec:
    rules = spec.mcp
    description = tool.description
    limit = rules.description_max_chars
    if limit is not None and len(description) > limit:
        description = description[:limit] + _CUT_MARK
    parameters = _object_schema(tool.parameters)
    if rules.strip_schema_keys:
        stripped = _strip(parameters, frozenset(rules.strip_schema_keys))
        assert isinstance(stripped, dict)
        parameters = stripped
    return tool.model_copy(update={"description": description, "parameters": parameters})


def _object_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The input schema as an object schema with `properties` (servers may omit both)."""
    result = dict(schema or {})
    result.setdefault("type", "object")
    if result.get("properties") is None:
        result["properties"] = {}
    return result


def _strip(schema: Any, keys: frozenset[str]) -> Any:
    if isinstance(schema, list):
        return [_strip(item, keys) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in keys:
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: _strip(sub, keys) for name, sub in value.items()}
        else:
            out[key] = _strip(value, keys)
    return out
