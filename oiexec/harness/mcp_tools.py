"""How a harness offers the run's MCP tools to the model, as its product does."""

from __future__ import annotations

from collections.abc import Sequence

from oiexec.core.protocols import Tool
from oiexec.harness.spec import HarnessSpec

__all__ = ["advertise_mcp_tools"]


def advertise_mcp_tools(spec: HarnessSpec, tools: Sequence[Tool]) -> list[Tool]:
    return list(tools)
