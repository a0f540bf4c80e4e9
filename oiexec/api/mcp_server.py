"""oiexec as an MCP server over stdio (`interpreter mcp-server`), so other agents can delegate
a coding task to it.

Codex's `codex`/`codex-reply` pair under oiexec's names, and a review:

- `run` starts a thread: `prompt`, and optionally `cwd`, `sandbox`, `model`, `profile`,
  `harness`, `config` (dotted keys to values, as `-c` takes them), `max_turns`, `timeout`.
- `reply` continues one: `threadId` (from a `run` result) and `prompt` (and the limits).
- `review` reviews a change read-only, as `interpreter review` does, and returns the
  findings and the gate's verdict.

`codex` and `codex-reply` are the same two under Codex's names and parameters
(oiexec/api/mcp_codex_tools.py), for agents set up for `codex mcp-server`.

`run` and `reply` return the final message as text content, and as structured content Codex's
`{threadId, content}` plus `exitCode`, `reason` (why a run stopped, as `turn.failed` says,
null on success) and `diff` (what the run changed in the worktree). A run that did not exit 0
comes back with `isError` set, its structured content still there. Bad arguments and errors
before the run starts (an unknown profile, a bad config value) are tool errors naming the
problem, never a crash of the server.

Each run goes through the Python API (`oiexec.api`), so config layering and every safety rule
are exec's: the approval policy is `never`, the sandbox fails closed, secrets are redacted.
The operator can cap what callers get (oiexec/api/mcp_caps.py). A sandbox given when
starting the server (`-s`) is the default and the loosest mode a call may ask for; callers
may then set only the config keys in `mcp_caps.CALLER_CONFIG_KEYS`, not switch hooks, not
name a profile other than the server's, and continue only threads this server started
(each of those could undo the cap from outside the sandbox). A directory given (`-C`) is
the default cwd and the tree a call's cwd must be inside.

stdout is the protocol channel. The SDK's stdio transport points fd 1 at stderr while it
serves, so nothing a run or its commands print can reach the channel.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from oiexec.api.mcp_caps import ServerDefaults
from oiexec.api.mcp_codex_tools import add_codex_tools
from oiexec.api.mcp_runs import (
    Config,
    Cwd,
    Limits,
    MaxTurns,
    ReviewOutcome,
    RunOutcome,
    Runs,
    Sandbox,
    Timeout,
)
from oiexec.core.version import __version__

__all__ = ["RunOutcome", "ServerDefaults", "build_server", "serve"]


def build_server(defaults: ServerDefaults | None = None) -> MCPServer[Any]:
    """The MCP server with its `run` and `reply` tools, and Codex's `codex` and
    `codex-reply` for clients set up for `codex mcp-server`."""
    runs = Runs(defaults or ServerDefaults())
    server: MCPServer[Any] = MCPServer(
        name="oiexec",
        version=__version__,
        instructions=(
            "Delegate a coding task to oiexec: `run` works on a git repository (cwd) until the "
            "task is done and returns the final message, exit code and diff; `reply` continues "
            "the thread with a follow-up prompt."
        ),
        # Request logs would go to stderr; the client only needs warnings there.
        log_level="WARNING",
    )

    @server.tool(
        name="run",
        description=(
            "Run a coding agent headless on a task, as `interpreter exec` does, and return its "
            "final message, exit code and the diff of what it changed."
        ),
    )
    async def run(
        prompt: Annotated[str, Field(description="The task.", min_length=1)],
        cwd: Cwd = None,
        sandbox: Sandbox = None,
        model: Annotated[str | None, Field(description="Model, e.g. gpt-5.5.")] = None,
        profile: Annotated[str | None, Field(description="Config profile.")] = None,
        harness: Annotated[str | None, Field(description="Harness, e.g. native.")] = None,
        config: Config = None,
        max_turns: MaxTurns = None,
        timeout: Timeout = None,
        ctx: Context[Any, Any] | None = None,
    ) -> Annotated[CallToolResult, RunOutcome]:
        return await runs.start(
            prompt,
            Limits(max_turns, timeout),
            ctx,
            cwd=cwd,
            sandbox=sandbox,
            model=model,
            profile=profile,
            harness=harness,
            config=config,
        )

    @server.tool(
        name="reply",
        description="Continue a thread that `run` started with a follow-up prompt.",
    )
    async def reply(
        threadId: Annotated[
            str, Field(description="The threadId a `run` result returned.", min_length=1)
        ],
        prompt: Annotated[str, Field(description="The follow-up prompt.", min_length=1)],
        max_turns: MaxTurns = None,
        timeout: Timeout = None,
        ctx: Context[Any, Any] | None = None,
    ) -> Annotated[CallToolResult, RunOutcome]:
        return await runs.resume(threadId, prompt, Limits(max_turns, timeout), ctx)

    @server.tool(
        name="review",
        description=(
            "Review a change read-only, as `interpreter review` does: exactly one of "
            "`uncommitted`, `base` (a branch), `commit` (a SHA) or `instructions`. Returns the "
            "findings and the gate's verdict (passed, or blocked by a finding at `fail_on` "
            "or worse)."
        ),
    )
    async def review(
        cwd: Cwd = None,
        uncommitted: Annotated[
            bool, Field(description="Review the staged, unstaged and untracked changes.")
        ] = False,
        base: Annotated[str | None, Field(description="Review the branch against BASE.")] = None,
        commit: Annotated[str | None, Field(description="Review one commit (a SHA).")] = None,
        instructions: Annotated[
            str | None, Field(description="Custom review instructions.")
        ] = None,
        fail_on: Annotated[
            Literal["P0", "P1", "P2", "P3"],
            Field(description="The priority that blocks, and every more severe one."),
        ] = "P1",
        model: Annotated[str | None, Field(description="Model, e.g. gpt-5.5.")] = None,
        profile: Annotated[str | None, Field(description="Config profile.")] = None,
        config: Config = None,
        max_turns: MaxTurns = None,
        timeout: Timeout = None,
        ctx: Context[Any, Any] | None = None,
    ) -> Annotated[CallToolResult, ReviewOutcome]:
        target = {
            "uncommitted": uncommitted,
            "base": base,
            "commit": commit,
            "instructions": instructions,
            "fail_on": fail_on,
        }
        return await runs.review(
            ctx,
            target=target,
            cwd=cwd,
            model=model,
            profile=profile,
            config=config,
            limits=Limits(max_turns, timeout),
        )

    add_codex_tools(server, runs)
    return server


def serve(defaults: ServerDefaults | None = None) -> None:
    """Serves over stdin/stdout until the client closes the connection."""
    build_server(defaults).run("stdio")
