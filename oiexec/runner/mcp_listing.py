"""What `interpreter mcp list` and `mcp get` show: the servers of the effective config (every
layer a run reads), in Codex's tables and JSON shapes, and for `list` whether each enabled
server starts and which tools it offers (a `probe` object per server in JSON, never in place
of one of Codex's fields).

The CLI parses the flags and prints what this returns; nothing here writes to a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config.mcp import McpServerConfig
from oiexec.core.errors import OiexecError

__all__ = ["McpServers", "load_mcp_servers"]

_EMPTY = "No MCP servers configured yet. Try `interpreter mcp add my-tool -- my-command`."


@dataclass(frozen=True)
class McpServers:
    """The configured servers, by name, and the warnings loading the config gave."""

    cwd: Path
    servers: dict[str, McpServerConfig]
    warnings: tuple[str, ...] = ()

    def list_output(self, *, as_json: bool, probe: bool) -> str:
        """`mcp list`: the table(s) or JSON array, each enabled server started once unless
        `probe` is False."""
        probes = _probe(self.servers, self.cwd) if probe and self.servers else {}
        if as_json:
            entries = []
            for name, cfg in self.servers.items():
                entry = _server_json(name, cfg)
                if name in probes:
                    entry["probe"] = probes[name].as_json()
                entries.append(entry)
            return json.dumps(entries, indent=2)
        if not self.servers:
            return _EMPTY
        lines = _tables(self.servers)
        if probes:
            lines.append("")
            lines += [probes[name].line(name) for name in self.servers if name in probes]
        return "\n".join(lines)

    def get_output(self, name: str, *, as_json: bool) -> str:
        """`mcp get NAME`; an unknown name is an error with Codex's message (exit 1)."""
        cfg = self.servers.get(name)
        if cfg is None:
            raise OiexecError(f"No MCP server named '{name}' found.")
        if as_json:
            entry = _server_json(name, cfg)
            return json.dumps(
                {
                    **{k: entry[k] for k in ("name", "enabled", "disabled_reason", "transport")},
                    "enabled_tools": cfg.enabled_tools,
                    "disabled_tools": cfg.disabled_tools or None,
                    "startup_timeout_sec": entry["startup_timeout_sec"],
                    "tool_timeout_sec": entry["tool_timeout_sec"],
                },
                indent=2,
            )
        if not cfg.enabled:
            return f"{name} (disabled)"
        return "\n".join(_get_lines(name, cfg))


def load_mcp_servers(cwd: Path, overrides: Sequence[str]) -> McpServers:
    """The servers a run in `cwd` with these `-c` overrides would read, sorted by name."""
    from oiexec.config.loader import ConfigInputs, load_config
    from oiexec.runner.programs import distrust_workspace

    loaded = load_config(ConfigInputs(cwd=cwd, overrides=tuple(overrides)))
    # `mcp list` starts the servers as a run would: nothing a run's commands could have
    # written here may choose what they run.
    distrust_workspace(cwd)
    return McpServers(
        cwd=cwd,
        servers=dict(sorted(loaded.settings.mcp_servers.items())),
        warnings=tuple(loaded.warnings),
    )


def _seconds(cfg: McpServerConfig, key: str) -> float | None:
    """Codex prints null for a timeout no config set, so defaults are not shown as set."""
    if key == "startup_timeout_sec" and cfg.startup_timeout_ms is not None:
        return cfg.startup_timeout_ms / 1000
    value: float = getattr(cfg, key)
    return value if key in cfg.model_fields_set else None


def _transport_json(cfg: McpServerConfig) -> dict[str, Any]:
    if cfg.url is not None:
        return {
            "type": "streamable_http",
            "url": cfg.url,
            "bearer_token_env_var": cfg.bearer_token_env_var,
            "http_headers": cfg.http_headers or None,
            "env_http_headers": cfg.env_http_headers or None,
        }
    return {
        "type": "stdio",
        "command": cfg.command,
        "args": cfg.args,
        "env": cfg.env or None,
        "env_vars": cfg.env_vars,
        "cwd": cfg.cwd,
    }


def _auth_status(cfg: McpServerConfig) -> tuple[str, str]:
    """(JSON value, table cell). Codex's OAuth states never occur: there is no login here."""
    has_auth_header = any(key.lower() == "authorization" for key in cfg.http_headers)
    if cfg.url is not None and (cfg.bearer_token_env_var or has_auth_header):
        return "bearer_token", "Bearer token"
    return "unsupported", "Unsupported"


def _env_display(cfg: McpServerConfig) -> str:
    """Values are masked: a listing is often pasted into a bug report."""
    parts = [f"{key}=*****" for key in sorted(cfg.env)]
    parts += [f"{var}=*****" for var in cfg.env_vars]
    return ", ".join(parts) if parts else "-"


def _server_json(name: str, cfg: McpServerConfig) -> dict[str, Any]:
    return {
        "name": name,
        "enabled": cfg.enabled,
        "disabled_reason": None,
        "transport": _transport_json(cfg),
        "startup_timeout_sec": _seconds(cfg, "startup_timeout_sec"),
        "tool_timeout_sec": _seconds(cfg, "tool_timeout_sec"),
        "auth_status": _auth_status(cfg)[0],
    }


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        # Every cell padded, the last one too, as Codex prints its tables.
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row))
        for row in [header, *rows]
    ]


def _tables(servers: dict[str, McpServerConfig]) -> list[str]:
    """Codex's two tables: stdio servers, then streamable-HTTP ones."""
    stdio_rows: list[list[str]] = []
    http_rows: list[list[str]] = []
    for name, cfg in servers.items():
        status = "enabled" if cfg.enabled else "disabled"
        auth = _auth_status(cfg)[1]
        if cfg.url is not None:
            http_rows.append([name, cfg.url, cfg.bearer_token_env_var or "-", status, auth])
        else:
            args = " ".join(cfg.args) if cfg.args else "-"
            command = cfg.command or "-"
            stdio_rows.append(
                [name, command, args, _env_display(cfg), cfg.cwd or "-", status, auth]
            )
    lines: list[str] = []
    if stdio_rows:
        lines += _table(["Name", "Command", "Args", "Env", "Cwd", "Status", "Auth"], stdio_rows)
    if stdio_rows and http_rows:
        lines.append("")
    if http_rows:
        lines += _table(["Name", "Url", "Bearer Token Env Var", "Status", "Auth"], http_rows)
    return lines


@dataclass(frozen=True)
class _Probe:
    """What starting a server once showed: `started` is None for a disabled server."""

    started: bool | None
    error: str | None = None
    tools: list[tuple[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        status = "disabled" if self.started is None else "started" if self.started else "failed"
        tools = [{"name": name, "description": text} for name, text in self.tools]
        return {"status": status, "error": self.error, "tools": tools}

    def line(self, name: str) -> str:
        if self.started is None:
            return f"{name}: disabled, not started"
        if not self.started:
            return f"{name}: failed to start: {self.error}"
        names = ", ".join(tool for tool, _ in self.tools) or "(none)"
        count = f"{len(self.tools)} tool" + ("" if len(self.tools) == 1 else "s")
        return f"{name}: started, {count}: {names}"


def _probe(servers: dict[str, McpServerConfig], cwd: Path) -> dict[str, _Probe]:
    """Starts every enabled server as a run would (same environment, timeouts, filters),
    lists its tools and stops it."""
    from oiexec.mcp.probe import probe_servers

    results: dict[str, _Probe] = {}
    for status in probe_servers(servers, cwd):
        if not status.enabled:
            results[status.name] = _Probe(started=None)
            continue
        tools = [(tool.name, tool.description) for tool in status.tools]
        results[status.name] = _Probe(started=status.started, error=status.error, tools=tools)
    return results


def _get_lines(name: str, cfg: McpServerConfig) -> list[str]:
    lines = [name, f"  enabled: {str(cfg.enabled).lower()}"]
    if cfg.enabled_tools is not None:
        lines.append(f"  enabled_tools: {', '.join(cfg.enabled_tools) or '[]'}")
    if cfg.disabled_tools:
        lines.append(f"  disabled_tools: {', '.join(cfg.disabled_tools)}")
    if cfg.url is not None:
        headers = ", ".join(f"{key}=*****" for key in sorted(cfg.http_headers)) or "-"
        env_headers = ", ".join(f"{key}={var}" for key, var in sorted(cfg.env_http_headers.items()))
        lines += [
            "  transport: streamable_http",
            f"  url: {cfg.url}",
            f"  bearer_token_env_var: {cfg.bearer_token_env_var or '-'}",
            f"  http_headers: {headers}",
            f"  env_http_headers: {env_headers or '-'}",
        ]
    else:
        lines += [
            "  transport: stdio",
            f"  command: {cfg.command}",
            f"  args: {' '.join(cfg.args) if cfg.args else '-'}",
            f"  cwd: {cfg.cwd or '-'}",
            f"  env: {_env_display(cfg)}",
        ]
    for key in ("startup_timeout_sec", "tool_timeout_sec"):
        seconds = _seconds(cfg, key)
        if seconds is not None:
            lines.append(f"  {key}: {seconds:g}")
    lines.append(f"  remove: interpreter mcp remove {name}")
    return lines
