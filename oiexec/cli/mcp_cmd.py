"""`interpreter mcp add|get|list|remove`: the MCP servers in config, as `codex mcp` manages them.

`add` and `remove` edit `[mcp_servers.<name>]` in the user config
(`$OPENINTERPRETER_HOME/config.toml`) and nothing else in it: comments and order survive.
`get` and `list` read the effective config, every layer a run reads (a trusted project's
servers and `-c` overrides included), so they show what a run would start; what they print
is built in runner/mcp_listing.py. Arguments, messages, tables and JSON fields are Codex's.

`login`/`logout` (Codex's OAuth flow for HTTP servers) are not supported: they exit 2 and say
how to pass a token instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from oiexec.runner.mcp_listing import McpServers

# Codex accepts '.' too (`my.docs`): the user file keys it as `[mcp_servers."my.docs"]`, and
# the tool names built from it keep only wire-safe characters (mcp/naming.py's `sanitize`).
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
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
        raise OiexecError(f"invalid server name '{name}' (use letters, numbers, '-', '_', '.')")


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


def _servers(overrides: tuple[str, ...]) -> McpServers:
    """The effective config's servers (group and command `-c` both apply), its warnings
    printed on stderr."""
    from oiexec.runner.mcp_listing import load_mcp_servers

    servers = load_mcp_servers(Path(os.getcwd()), (*_group_overrides(), *overrides))
    for warning in servers.warnings:
        click.echo(f"warning: {warning}", err=True)
    return servers


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
    click.echo(_servers(overrides).list_output(as_json=as_json, probe=not no_probe))


@mcp_group.command("get")
@_OVERRIDES
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Output the server configuration as JSON.")
def get_command(overrides: tuple[str, ...], name: str, as_json: bool) -> None:
    """Show one configured server."""
    click.echo(_servers(overrides).get_output(name, as_json=as_json))


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
