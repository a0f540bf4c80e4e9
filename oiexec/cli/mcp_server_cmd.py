"""`interpreter mcp-server`: oiexec as an MCP server over stdio (see oiexec/api/mcp_server.py).

Its flags set what every run gets unless the tool call says otherwise. `-s` is also the
loosest sandbox a call may ask for (and closes what could undo it: most config keys, other
profiles, the hook switches, threads started elsewhere; see oiexec/api/mcp_caps.py), `-C` the
tree a call's cwd must be inside.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from oiexec.core.policy import SANDBOX_MODES


@click.command("mcp-server")
@click.option("-m", "--model", help="Default model for runs.")
@click.option(
    "-s",
    "--sandbox",
    "sandbox_mode",
    type=click.Choice(SANDBOX_MODES),
    help=(
        "Default sandbox for runs, and the loosest one a tool call may ask for; callers then "
        "keep to the server's profile and config, except keys that shape the model's work."
    ),
)
@click.option(
    "-C",
    "--cd",
    "root",
    type=click.Path(exists=True, file_okay=False),
    help="Default working directory for runs; a call's cwd must be inside it.",
)
@click.option("-p", "--profile", help="Config profile for runs.")
@click.option("--harness", help="Default harness for runs.")
@click.option(
    "-c",
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value for every run, as exec's -c (may be repeated).",
)
def mcp_server_command(
    model: str | None,
    sandbox_mode: Any,
    root: str | None,
    profile: str | None,
    harness: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Serve oiexec as an MCP server on stdio: tools run, reply, review (and codex, codex-reply)."""
    from oiexec.api.mcp_caps import server_defaults
    from oiexec.api.mcp_server import serve

    defaults = server_defaults(
        model=model,
        sandbox=sandbox_mode,
        root=root,
        profile=profile,
        harness=harness,
        overrides=overrides,
    )
    if sys.stdin.isatty():
        # Someone typed the command to try it: the protocol would just sit there waiting.
        click.echo(
            "interpreter mcp-server speaks MCP (JSON-RPC) on stdin/stdout: start it from an MCP "
            "client, e.g. `interpreter mcp add oiexec -- interpreter mcp-server` for another "
            'oiexec, or [mcp_servers.oiexec] command = "interpreter", args = ["mcp-server"] '
            "in Codex's config. Waiting for a client; Ctrl-C to stop.",
            err=True,
        )
    serve(defaults)
