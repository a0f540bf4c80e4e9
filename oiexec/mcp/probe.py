"""Start the configured servers once, report what each offers, stop them: what
`interpreter mcp list` shows (and what a run would get)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from oiexec.config.mcp import McpServerConfig
from oiexec.mcp.manager import McpManager, ServerStatus, ServerTool

__all__ = ["ServerStatus", "ServerTool", "probe_servers"]


def probe_servers(
    servers: Mapping[str, McpServerConfig],
    cwd: Path,
    timeout: float | None = None,
) -> list[ServerStatus]:
    """One status per configured server, in config order: disabled ones are listed with
    `enabled=False, started=False`; `timeout` (seconds), when given, caps every server's
    `startup_timeout_sec`. Every server started here is stopped before this returns."""
    configs = {
        name: (
            config.model_copy(
                update={
                    "startup_timeout_sec": min(config.startup_timeout, timeout),
                    "startup_timeout_ms": None,
                }
            )
            if timeout is not None
            else config
        )
        for name, config in servers.items()
    }
    manager = McpManager(configs, cwd=cwd)
    try:
        return manager.start()
    finally:
        manager.close()
