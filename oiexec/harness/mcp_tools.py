"""How a harness offers the run's MCP tools to the model, as its product does.

Every function-calling harness names them `mcp__<server>__<tool>` (Codex's rule, which
Claude Code and Qwen Code share) and gives the server's description and input schema; the
product differences are data in the manifest's `[mcp]` table:

- native (Codex): the schema gets `properties: {}` when the server left it out (OpenAI
  models require it; Codex inserts it too); with many tools they are deferred behind
  `tool_search` (harness/tool_search.py).
- claude-code: descriptions are cut at 2048 characters and marked `… [truncated]`, as
  Claude Code does since 2.1.84.
- qwen-code: JSON-Schema keywords the product strips are removed.

Text-action harnesses (mini-swe-agent-text's fenced blocks, SWE-agent's commands) have no
function calling, so MCP tools cannot be offered there: `unavailable_warning` says so once
per run, naming the harness and the servers, instead of dropping them silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.protocols import Tool
from oiexec.core.types import HistoryItem, ToolCall, ToolOutput, ToolSpec
from oiexec.harness.spec import HarnessSpec
from oiexec.harness.tool_search import ToolSearch, loaded_tool_names, server_of

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
    return [_Advertised(tool, _product_spec(spec, tool.spec)) for tool in tools]


class McpOffer:
    """Which MCP tools a request offers: all of them, or (deferred) the search tool plus
    the tools earlier searches returned."""

    def __init__(self, spec: HarnessSpec, tools: Sequence[Tool], *, always_defer: bool) -> None:
        threshold = spec.mcp.defer_at
        defer = bool(tools) and threshold is not None and (always_defer or len(tools) >= threshold)
        self.search: ToolSearch | None = (
            ToolSearch(tools, default_limit=spec.mcp.search_limit) if defer else None
        )

    def tools(self, advertised: Sequence[Tool]) -> list[Tool]:
        """Every tool the loop may dispatch to: deferred ones stay callable."""
        return [*advertised, self.search] if self.search is not None else list(advertised)

    def offered(
        self, specs: Sequence[ToolSpec], history: Sequence[HistoryItem]
    ) -> tuple[ToolSpec, ...]:
        if self.search is None:
            return tuple(specs)
        hidden = self.search.deferred_names - loaded_tool_names(history)
        return tuple(spec for spec in specs if spec.name not in hidden)


def offer_mcp_tools(
    spec: HarnessSpec, tools: Sequence[Tool], *, always_defer: bool = False
) -> tuple[list[Tool], McpOffer]:
    """The advertised tools (search tool included) and what each request offers of them."""
    advertised = advertise_mcp_tools(spec, tools)
    # Only the servers' own tools are deferred; the resource tools stay listed, as in Codex.
    deferrable = [tool for tool in advertised if tool.spec.name.startswith("mcp__")]
    offer = McpOffer(spec, deferrable, always_defer=always_defer)
    return offer.tools(advertised), offer


class _Advertised:
    """An MCP tool under its product's spec; calls and attributes go to the tool itself."""

    def __init__(self, tool: Tool, spec: ToolSpec) -> None:
        self._tool = tool
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        return self._tool.run(call, ctx)

    def __getattr__(self, name: str) -> Any:
        # `server`, `tool`, `annotations`: what the approval and hooks code reads.
        return getattr(self._tool, name)


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
