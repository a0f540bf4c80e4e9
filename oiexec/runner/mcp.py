"""The run's MCP servers: started with the run, their tools handed to the harness, stopped
when the run ends however it ends."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from oiexec.core.context import ToolContext
from oiexec.core.errors import ConfigError
from oiexec.core.protocols import Tool

if TYPE_CHECKING:
    from oiexec.mcp.manager import ServerStatus
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
    `stack` closes.

    A `required` server that does not start fails the run (exit 3) before the turn; any other
    is reported on stderr and in the run log, and the run goes on without its tools (Codex
    reports MCP startup failures outside the JSON stream, so no item is added)."""
    servers = prepared.config.settings.mcp_servers
    if not any(config.enabled for config in servers.values()):
        return ()
    from oiexec.mcp.approval import approval_mode
    from oiexec.mcp.manager import McpManager
    from oiexec.mcp.naming import qualified_names
    from oiexec.mcp.resources import resource_tools
    from oiexec.mcp.tools import McpTool

    manager = McpManager(servers, cwd=ctx.cwd, note=runlog.note if runlog is not None else None)
    # Registered before anything starts: an interrupt during startup still stops them.
    stack.callback(manager.close)
    statuses = manager.start()
    failed = [status for status in statuses if status.enabled and not status.started]
    required = [status for status in failed if servers[status.name].required]
    if required:
        raise ConfigError(_required_failure(required))
    for status in failed:
        ctx.warn(
            # Codex's wording for the same warning, with the reason oiexec found.
            f"MCP client for `{status.name}` failed to start: {status.error}; "
            "continuing without its tools"
        )

    started = [status for status in statuses if status.started]
    names = qualified_names((tool.server, tool.name) for s in started for tool in s.tools)
    # Approval is always `never` in exec, so `danger-full-access` (or the bypass flag) is
    # Codex's full-access mode, in which every MCP call runs.
    full_access = prepared.policy.mode == "danger-full-access"
    # No tool hands the model unbounded output: a server's result is cut as a command's is.
    output_tokens = prepared.config.settings.tool_output_token_limit
    tools: list[Tool] = []
    for status in started:
        config = servers[status.name]
        tools.extend(
            McpTool(
                manager=manager,
                listed=tool,
                name=names[(tool.server, tool.name)],
                timeout=config.tool_timeout_sec,
                approval=approval_mode(config, tool.name),
                full_access=full_access,
                output_tokens=output_tokens,
            )
            for tool in status.tools
        )
    if started:
        tools.extend(resource_tools(manager, [s.name for s in started], output_tokens))
    return tuple(tools)


def _required_failure(failed: list[ServerStatus]) -> str:
    """Every required server that did not start, with its reason, and what to do."""
    reasons = "; ".join(f"`{status.name}`: {status.error}" for status in failed)
    if len(failed) == 1:
        noun, fix = "server", f"set `mcp_servers.{failed[0].name}.required = false`"
    else:
        names = ", ".join(status.name for status in failed)
        noun, fix = "servers", f"set `required = false` in [mcp_servers.<name>] for {names}"
    return (
        f"required MCP {noun} failed to start: {reasons}. Check the command or url (the "
        f"server's own output is in the run log), raise `startup_timeout_sec`, or {fix} "
        "to run without it."
    )
