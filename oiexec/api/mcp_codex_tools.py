"""`codex` and `codex-reply` on `interpreter mcp-server`: the `run`/`reply` tools under
Codex's names and parameters (codex-rs/mcp-server's `codex_tool_config.rs`), so an agent set
up for `codex mcp-server` can call oiexec unchanged. Parameters oiexec cannot honour
(`approval-policy` other than `never`, `base-instructions`, `developer-instructions`,
`compact-prompt`) are refused by name rather than ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from pydantic import Field

from oiexec.api.mcp_runs import Config, Cwd, Limits, RunOutcome, Runs, Sandbox

__all__ = ["add_codex_tools"]


def _unsupported(name: str, value: str | None) -> None:
    if value is not None:
        raise ToolError(
            f"`{name}` is not supported by oiexec (its prompts are each harness's own); "
            "leave it out, or use `run` with `config` and `harness`"
        )


def add_codex_tools(server: MCPServer[Any], runs: Runs) -> None:
    """Registers `codex` and `codex-reply` on `server`, running through `runs`."""

    @server.tool(
        name="codex",
        title="Codex",
        description=(
            "Run a Codex-compatible session with oiexec (the `run` tool under Codex's name "
            "and parameters)."
        ),
    )
    async def codex(
        prompt: Annotated[str, Field(description="The initial user prompt.", min_length=1)],
        model: Annotated[str | None, Field(description="Model override.")] = None,
        profile: Annotated[str | None, Field(description="Config profile.")] = None,
        cwd: Cwd = None,
        approval_policy: Annotated[
            Literal["untrusted", "on-failure", "on-request", "never"] | None,
            Field(
                validation_alias="approval-policy",
                description="Only `never`: oiexec runs headless and never asks.",
            ),
        ] = None,
        sandbox: Sandbox = None,
        config: Config = None,
        base_instructions: Annotated[
            str | None, Field(validation_alias="base-instructions", description="Unsupported.")
        ] = None,
        developer_instructions: Annotated[
            str | None,
            Field(
                validation_alias="developer-instructions",
                description="Added after the harness's prompt (config `developer_instructions`).",
            ),
        ] = None,
        compact_prompt: Annotated[
            str | None, Field(validation_alias="compact-prompt", description="Unsupported.")
        ] = None,
        ctx: Context[Any, Any] | None = None,
    ) -> Annotated[CallToolResult, RunOutcome]:
        if approval_policy not in (None, "never"):
            raise ToolError(
                f"approval-policy {approval_policy!r}: oiexec runs headless and never asks "
                "for approval (as `codex exec`); leave it out or pass 'never'"
            )
        _unsupported("base-instructions", base_instructions)
        if developer_instructions is not None:
            # Codex's parameter for its config key; kept with the thread for `codex-reply`.
            config = {**(config or {}), "developer_instructions": developer_instructions}
        _unsupported("compact-prompt", compact_prompt)
        return await runs.start(
            prompt,
            Limits(),
            ctx,
            cwd=cwd,
            sandbox=sandbox,
            model=model,
            profile=profile,
            harness=None,
            config=config,
        )

    @server.tool(
        name="codex-reply",
        title="Codex Reply",
        description="Continue a thread by its thread id with the next prompt.",
    )
    async def codex_reply(
        prompt: Annotated[str, Field(description="The next user prompt.", min_length=1)],
        threadId: Annotated[str | None, Field(description="The thread id.")] = None,
        conversationId: Annotated[
            str | None, Field(description="Deprecated: use threadId.")
        ] = None,
        ctx: Context[Any, Any] | None = None,
    ) -> Annotated[CallToolResult, RunOutcome]:
        thread_id = threadId or conversationId
        if not thread_id:
            raise ToolError("either threadId or conversationId must be provided")
        return await runs.resume(thread_id, prompt, Limits(), ctx)
