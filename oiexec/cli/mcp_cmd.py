"""`interpreter mcp add|get|list|remove`: the MCP servers in config, as `codex mcp` manages them.

`add` and `remove` edit `[mcp_servers.<name>]` in the user config
(`$OPENINTERPRETER_HOME/config.toml`) and nothing else in it: comments and order survive.
`get` and `list` read the effective config, every layer a run reads (a trusted project's
servers and `-c` overrides included), so they show what a run would start. Arguments,
messages, tables and JSON fields are Codex's; `list` also starts each enabled server once and
shows whether it came up and which tools it offers (`--no-probe` prints Codex's listing
only), and its JSON gains a `probe` object per server, never losing one of Codex's fields.

`login`/`logout` (Codex's OAuth flow for HTTP servers) are not supported: they exit 2 and say
how to pass a token instead.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from oiexec.config.mcp import McpServerConfig

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_OVERRIDES = click.option(
    "-c",
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value, as exec's -c (may be repeated).",
)


def _validate_name(name: str) -> None:
    from oiexec.core.errors import OiexecError

    if not _NAME.fullmatch(name):
        # Codex exits 1 here (not a usage error): the same code keeps scripts portable.
        raise OiexecError(f"invalid server name '{name}' (use letters, numbers, '-', '_')")


def _parse_env(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    env: dict[str, str] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"'{raw}': environment entries must be in KEY=VALUE form")
        env[key.strip()] = value
    return env


def _user_config() -> Path:
    from oiexec.config.environment import default_home
    from oiexec.config.overrides import parse_override

    # As Codex: `-c` does not apply to an edit of the user file, but a malformed one is
    # still an error rather than silently dropped.
    for text in _group_overrides():
        parse_override(text)
    return default_home() / "config.toml"


@click.group("mcp")
@_OVERRIDES
@click.pass_context
def mcp_group(ctx: click.Context, overrides: tuple[str, ...]) -> None:
    """Manage the MCP servers runs start (`[mcp_servers]` in config)."""
    ctx.obj = overrides


def _group_overrides() -> tuple[str, ...]:
    """`-c` given before the subcommand (`interpreter mcp -c k=v list`), as Codex takes it."""
    overrides: tuple[str, ...] = click.get_current_context().obj or ()
    return overrides


@mcp_group.command(
    "add",
    # Options of the server's own command (`-- npx -y pkg --port 1`) stay in COMMAND.
    context_settings={"ignore_unknown_options": True},
)
@click.argument("name")
@click.option(
    "--env",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_parse_env,
    help="Environment variable to set when launching the server (may be repeated).",
)
@click.option(
    "--url", metavar="URL", help="URL of a streamable-HTTP server (instead of a command)."
)
@click.option(
    "--bearer-token-env-var",
    metavar="ENV_VAR",
    help="Environment variable whose value is sent as `Authorization: Bearer` (with --url).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def add_command(
    name: str,
    env: dict[str, str],
    url: str | None,
    bearer_token_env_var: str | None,
    command: tuple[str, ...],
) -> None:
    """Add a server to the user config: `NAME [--env K=V]... -- COMMAND [ARGS]...` or
    `NAME --url URL [--bearer-token-env-var VAR]`."""
    from oiexec.config.mcp import McpServerConfig
    from oiexec.config.user_file import set_mcp_server

    _validate_name(name)
    entry: dict[str, Any]
    if url is not None:
        if command:
            raise click.UsageError(
                "the argument '--url <URL>' cannot be used with a command: a server is either "
                "a stdio command (-- COMMAND [ARGS]...) or a streamable-HTTP URL (--url URL)"
            )
        if env:
            raise click.UsageError(
                "--env applies to a stdio server's command; an HTTP server takes "
                "--bearer-token-env-var (or http_headers in config.toml)"
            )
        entry = {"url": url}
        if bearer_token_env_var:
            entry["bearer_token_env_var"] = bearer_token_env_var
    else:
        if not command:
            raise click.UsageError(
                "a server needs a command (interpreter mcp add NAME -- COMMAND [ARGS]...) "
                "or a URL (interpreter mcp add NAME --url URL)"
            )
        if bearer_token_env_var is not None:
            raise click.UsageError("--bearer-token-env-var requires --url")
        entry = {"command": command[0]}
        if command[1:]:
            entry["args"] = list(command[1:])
        if env:
            entry["env"] = env
    McpServerConfig.model_validate(entry)  # what a run will read back must be valid
    set_mcp_server(_user_config(), name, entry)
    click.echo(f"Added global MCP server '{name}'.")


@mcp_group.command("remove")
@click.argument("name")
def remove_command(name: str) -> None:
    """Remove a server from the user config."""
    from oiexec.config.user_file import remove_mcp_server

    _validate_name(name)
    if remove_mcp_server(_user_config(), name):
        click.echo(f"Removed global MCP server '{name}'.")
    else:
        click.echo(f"No MCP server named '{name}' found.")


def _load_servers(overrides: tuple[str, ...]) -> tuple[dict[str, McpServerConfig], Path]:
    from oiexec.config.loader import ConfigInputs, load_config

    cwd = Path(os.getcwd())
    inputs = ConfigInputs(
        cwd=cwd,
        overrides=(*_group_overrides(), *overrides),
    )
    loaded = load_config(inputs)
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    return dict(sorted(loaded.settings.mcp_servers.items())), cwd


def _seconds(cfg: McpServerConfig, field: str) -> float | None:
    """Codex prints null for a timeout no config set, so defaults are not shown as set."""
    if field == "startup_timeout_sec" and cfg.startup_timeout_ms is not None:
        return cfg.startup_timeout_ms / 1000
    value: float = getattr(cfg, field)
    return value if field in cfg.model_fields_set else None


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


@mcp_group.command("list")
@_OVERRIDES
@click.option("--json", "as_json", is_flag=True, help="Output the configured servers as JSON.")
@click.option(
    "--no-probe",
    is_flag=True,
    help="Do not start the servers: print the configuration only (Codex's listing).",
)
def list_command(overrides: tuple[str, ...], as_json: bool, no_probe: bool) -> None:
    """List configured servers; each enabled one is started once to show its tools."""
    servers, cwd = _load_servers(overrides)
    probes = {} if no_probe or not servers else _probe(servers, cwd)
    if as_json:
        entries = []
        for name, cfg in servers.items():
            entry = _server_json(name, cfg)
            if name in probes:
                entry["probe"] = probes[name].as_json()
            entries.append(entry)
        click.echo(json.dumps(entries, indent=2))
        return
    if not servers:
        click.echo(
            "No MCP servers configured yet. Try `interpreter mcp add my-tool -- my-command`."
        )
        return
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
        header = ["Name", "Command", "Args", "Env", "Cwd", "Status", "Auth"]
        lines += _table(header, stdio_rows)
    if stdio_rows and http_rows:
        lines.append("")
    if http_rows:
        lines += _table(["Name", "Url", "Bearer Token Env Var", "Status", "Auth"], http_rows)
    if probes:
        lines.append("")
        lines += [probes[name].line(name) for name in servers if name in probes]
    click.echo("\n".join(lines))


@mcp_group.command("get")
@_OVERRIDES
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Output the server configuration as JSON.")
def get_command(overrides: tuple[str, ...], name: str, as_json: bool) -> None:
    """Show one configured server."""
    from oiexec.core.errors import OiexecError

    servers, _ = _load_servers(overrides)
    cfg = servers.get(name)
    if cfg is None:
        raise OiexecError(f"No MCP server named '{name}' found.")
    if as_json:
        entry = _server_json(name, cfg)
        del entry["auth_status"]
        entry = {
            **{k: entry[k] for k in ("name", "enabled", "disabled_reason", "transport")},
            "enabled_tools": cfg.enabled_tools,
            "disabled_tools": cfg.disabled_tools or None,
            "startup_timeout_sec": entry["startup_timeout_sec"],
            "tool_timeout_sec": entry["tool_timeout_sec"],
        }
        click.echo(json.dumps(entry, indent=2))
        return
    if not cfg.enabled:
        click.echo(f"{name} (disabled)")
        return
    for line in _get_lines(name, cfg):
        click.echo(line)


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


_NO_OAUTH = (
    "OAuth login for MCP servers is not supported by oiexec. Give an HTTP server its token "
    "through an environment variable instead: "
    "interpreter mcp add NAME --url URL --bearer-token-env-var VAR "
    "(or bearer_token_env_var / env_http_headers in config.toml)."
)


@mcp_group.command("login", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def login_command(args: tuple[str, ...]) -> None:
    """Not supported: OAuth login (use --bearer-token-env-var)."""
    from oiexec.core.errors import UsageError

    raise UsageError(_NO_OAUTH)


@mcp_group.command("logout", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def logout_command(args: tuple[str, ...]) -> None:
    """Not supported: there are no OAuth credentials to remove."""
    from oiexec.core.errors import UsageError

    raise UsageError(_NO_OAUTH)
