"""How each harness offers MCP tools, checked on the requests the harness shapes: Codex's
deferral threshold and tool_search ranking with many tools, Claude Code's description limit,
Qwen Code's schema clean-up, and what a text harness does with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.context import ToolContext
from oiexec.core.types import ModelRequest, ToolCall, ToolOutput, ToolSpec
from oiexec.harness.data import load_spec
from oiexec.harness.manifest import HarnessSetup, ManifestHarness
from oiexec.harness.tool_search import server_of
from oiexec.harness.web_search import web_search_supported
from tests.conftest import MakeToolContext


class FakeMcpTool:
    """The shape of oiexec.mcp.tools.McpTool the harness relies on."""

    def __init__(
        self,
        server: str,
        tool: str,
        description: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.tool = tool
        self.annotations = None
        self._spec = ToolSpec(
            name=f"mcp__{server}__{tool}", description=description, parameters=parameters
        )
        self.calls: list[ToolCall] = []

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        self.calls.append(call)
        return ToolOutput(call_id=call.call_id, output=f"ran {self.tool}")


def _many(count: int) -> list[FakeMcpTool]:
    tools = [
        FakeMcpTool("crm", f"record_{i}", f"Update customer record number {i}.")
        for i in range(count - 2)
    ]
    tools.append(
        FakeMcpTool(
            "weather",
            "forecast",
            "Forecast for a city.",
            {"type": "object", "properties": {"city": {"type": "string"}}},
        )
    )
    tools.append(FakeMcpTool("docs", "search_pages", "Search the documentation pages."))
    return tools


def _harness(harness_id: str, tools: list[FakeMcpTool], **setup: Any) -> ManifestHarness:
    return ManifestHarness(
        load_spec(harness_id),
        HarnessSetup(variables={}, extra_tools=tuple(tools), **setup),
    )


def _offered(harness: ManifestHarness, history: tuple[Any, ...] = ()) -> list[str]:
    request = ModelRequest(
        model="m",
        instructions="",
        history=history,
        tools=tuple(tool.spec for tool in harness.tools()),
    )
    return [spec.name for spec in harness.prepare_request(request).tools]


def test_native_offers_99_mcp_tools_directly() -> None:
    offered = _offered(_harness("native", _many(99)))
    assert "tool_search" not in offered
    assert sum(name.startswith("mcp__") for name in offered) == 99


def test_native_defers_100_mcp_tools_until_a_search_loads_some(
    tool_context: MakeToolContext, tmp_path: Path
) -> None:
    tools = _many(100)
    harness = _harness("native", tools)
    first = _offered(harness)
    assert "tool_search" in first and "exec_command" in first
    assert not [name for name in first if name.startswith("mcp__")]
    by_name = {tool.spec.name: tool for tool in harness.tools()}
    forecast = ToolCall(call_id="f1", name="mcp__weather__forecast", arguments="{}")

    # Not offered yet: the call is refused and never reaches the server.
    refused = by_name["mcp__weather__forecast"].run(forecast, tool_context(tmp_path))
    assert refused.is_error and "`tool_search`" in refused.output
    assert tools[-2].calls == []

    call = ToolCall(
        call_id="s1", name="tool_search", arguments=json.dumps({"query": "weather city"})
    )
    output = by_name["tool_search"].run(call, tool_context(tmp_path))
    found = [tool["name"] for tool in json.loads(output.output)["tools"]]
    assert found[0] == "mcp__weather__forecast"

    later = _offered(harness, (call, output))
    assert set(later) - set(first) == set(found)
    ran = by_name["mcp__weather__forecast"].run(forecast, tool_context(tmp_path))
    assert (ran.is_error, ran.output, tools[-2].calls) == (False, "ran forecast", [forecast])


def test_tool_search_limit_and_bad_queries(tool_context: MakeToolContext, tmp_path: Path) -> None:
    harness = _harness("native", _many(120))
    search = next(t for t in harness.tools() if t.spec.name == "tool_search")
    ctx = tool_context(tmp_path)

    def run(arguments: dict[str, Any]) -> ToolOutput:
        return search.run(
            ToolCall(call_id="s", name="tool_search", arguments=json.dumps(arguments)), ctx
        )

    assert len(json.loads(run({"query": "customer record"}).output)["tools"]) == 8
    assert len(json.loads(run({"query": "customer record", "limit": 3}).output)["tools"]) == 3
    assert json.loads(run({"query": "zebra"}).output)["tools"] == []
    refused = run({"limit": 2})
    assert refused.is_error and "query" in refused.output


def test_always_defer_feature_defers_a_single_tool() -> None:
    tools = [FakeMcpTool("docs", "search_pages", "Search the documentation pages.")]
    assert _offered(_harness("native", tools, always_defer_mcp_tools=True)) == [
        "exec_command",
        "write_stdin",
        "apply_patch",
        "update_plan",
        "tool_search",
    ]
    # Harnesses whose product has no tool_search offer the tool whatever the feature says.
    assert "mcp__docs__search_pages" in _offered(
        _harness("claude-code", tools, always_defer_mcp_tools=True)
    )


def test_claude_code_cuts_long_descriptions_and_native_keeps_them() -> None:
    long = FakeMcpTool("docs", "search_pages", "x" * 5000)
    cut = next(t for t in _harness("claude-code", [long]).tools() if t.spec.name.startswith("mcp"))
    assert cut.spec.description == "x" * 2048 + "… [truncated]"
    kept = next(t for t in _harness("native", [long]).tools() if t.spec.name.startswith("mcp"))
    assert kept.spec.description == "x" * 5000


def test_qwen_code_strips_schema_keywords_but_not_property_names() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "$schema": {"type": "string"},
            "filter": {"$schema": "x", "type": "object", "properties": {}},
        },
    }
    tool = FakeMcpTool("db", "query", "Run a query.", schema)
    offered = next(
        t for t in _harness("qwen-code", [tool]).tools() if t.spec.name.startswith("mcp")
    )
    parameters = offered.spec.parameters
    assert parameters is not None
    assert "$schema" not in parameters
    assert set(parameters["properties"]) == {"$schema", "filter"}
    assert "$schema" not in parameters["properties"]["filter"]


def test_a_schema_without_properties_gets_them(
    tool_context: MakeToolContext, tmp_path: Path
) -> None:
    tool = FakeMcpTool("clock", "now", "The time.", None)
    harness = _harness("native", [tool])
    offered = next(t for t in harness.tools() if t.spec.name == "mcp__clock__now")
    assert offered.spec.parameters == {"type": "object", "properties": {}}
    # Calls reach the server's tool, and its attributes stay readable through the harness.
    call = ToolCall(call_id="c", name="mcp__clock__now", arguments="{}")
    assert offered.run(call, tool_context(tmp_path)).output == "ran now"
    assert tool.calls == [call]
    assert server_of(offered) == "clock"


@pytest.mark.parametrize("harness_id", ["mini-swe-agent-text", "swe-agent"])
def test_text_harnesses_offer_no_mcp_tools_and_warn_once(harness_id: str) -> None:
    warnings: list[str] = []
    harness = _harness(harness_id, _many(3), warn=warnings.append)
    assert not [t for t in harness.tools() if t.spec.name.startswith("mcp__")]
    assert len(warnings) == 1
    assert f"`{harness_id}`" in warnings[0]
    assert "MCP servers `crm`, `docs`, `weather`" in warnings[0]


def test_web_search_supported_only_for_native_on_responses() -> None:
    assert web_search_supported("native", "responses")
    assert not web_search_supported("native", "chat")
    assert not web_search_supported("claude-code", "responses")
    assert not web_search_supported("qwen-code", "chat")
