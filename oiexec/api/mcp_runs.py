"""What `interpreter mcp-server`'s tools share: one run or continuation through the Python
API within the operator's caps (oiexec/api/mcp_caps.py), progress notifications and the
result every tool returns (see oiexec/api/mcp_server.py for the tools)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from oiexec.api.mcp_caps import (
    ServerDefaults,
    check_config,
    check_thread,
    choose_cwd,
    choose_profile,
    choose_sandbox,
)
from oiexec.config.layers import deep_merge
from oiexec.core.errors import OiexecError
from oiexec.core.events import (
    CommandExecutionItem,
    FileChangeItem,
    ItemCompleted,
    McpToolCallItem,
    ThreadEvent,
)
from oiexec.core.policy import SandboxMode

if TYPE_CHECKING:
    from oiexec.api import Agent

__all__ = [
    "Config",
    "Cwd",
    "Limits",
    "MaxTurns",
    "ReviewOutcome",
    "RunOutcome",
    "Runs",
    "Sandbox",
    "Timeout",
]


class RunOutcome(BaseModel):
    """The structured content of a `run`/`reply` result."""

    threadId: str | None = Field(description="The thread to continue with `reply`.")
    content: str = Field(description="The agent's final message.")
    exitCode: int = Field(description="interpreter exec's exit code (0: the turn completed).")
    reason: str | None = Field(description="Why the run stopped early (null on success).")
    diff: str = Field(description="Unified diff of what the run changed in the worktree.")


MaxTurns = Annotated[
    int | None, Field(description="Stop after this many model turns (exit code 4).", ge=1)
]
Timeout = Annotated[
    float | None, Field(description="Stop after this many seconds (exit code 5).", gt=0)
]


def _outcome(thread_id: str | None, result: Any) -> CallToolResult:
    outcome = RunOutcome(
        threadId=thread_id,
        content=result.final_response or "",
        exitCode=int(result.exit_code),
        reason=result.reason,
        diff=result.diff or "",
    )
    text = outcome.content
    if outcome.exitCode != 0:
        status = f"The run ended with exit code {outcome.exitCode}"
        status += f" ({outcome.reason})." if outcome.reason else "."
        text = f"{text}\n\n{status}" if text else status
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=outcome.model_dump(mode="json"),
        is_error=outcome.exitCode != 0,
    )


@dataclass(frozen=True)
class Limits:
    max_turns: int | None = None
    timeout: float | None = None


def _describe(event: ThreadEvent) -> str | None:
    """One line per completed item, for the caller's progress display."""
    if not isinstance(event, ItemCompleted):
        return None
    item = event.item
    if isinstance(item, CommandExecutionItem):
        return f"ran `{item.command}` (exit code {item.exit_code})"
    if isinstance(item, FileChangeItem):
        return "changed " + ", ".join(change.path for change in item.changes)
    if isinstance(item, McpToolCallItem):
        return f"called {item.server}.{item.tool} ({item.status})"
    return item.type.replace("_", " ")


class _Progress:
    """Sends a progress notification per completed item when the caller asked for progress
    (a `progressToken`): a long run shows what it does, and clients that extend their
    request timeout on progress do not give up on it."""

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._ctx = ctx
        self._count = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, event: ThreadEvent) -> None:
        message = _describe(event)
        if message is None:
            return
        self._count += 1
        # Called synchronously from inside the turn's event loop: the send is scheduled.
        task = asyncio.get_running_loop().create_task(self._send(self._count, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, count: int, message: str) -> None:
        with contextlib.suppress(Exception):  # progress is best effort, never the run's end
            await self._ctx.report_progress(count, message=message)


@contextlib.contextmanager
def _api_errors() -> Iterator[None]:
    """The API's errors as tool errors the caller reads."""
    try:
        yield
    except OiexecError as exc:
        # Errors before the thread starts (config, usage, unknown thread): the caller's to fix.
        raise ToolError(exc.render()) from exc
    except Exception as exc:
        # A bug must not look like the caller's fault, nor hide what happened.
        if os.environ.get("OIEXEC_DEBUG"):
            traceback.print_exc(file=sys.stderr)
        raise ToolError(
            f"internal error: {type(exc).__name__}: {exc}. This is a bug in oiexec; "
            "run `interpreter mcp-server` with OIEXEC_DEBUG=1 for the traceback on stderr."
        ) from exc


def _progress(ctx: Context[Any, Any] | None) -> _Progress | None:
    return _Progress(ctx) if ctx is not None else None


async def _run_turn(
    agent: Agent,
    thread_id: str | None,
    prompt: str,
    limits: Limits,
    ctx: Context[Any, Any] | None,
) -> tuple[str | None, Any]:
    with _api_errors():
        thread = agent.resume_thread(thread_id) if thread_id else agent.start_thread()
        result = await thread.arun(
            prompt, max_turns=limits.max_turns, timeout=limits.timeout, on_event=_progress(ctx)
        )
    return result.thread_id or thread.id, result


class ReviewOutcome(BaseModel):
    """The structured content of a `review` result."""

    threadId: str | None = Field(description="The review's thread.")
    exitCode: int = Field(description="interpreter review's exit code (0 passed, 7 blocked).")
    verdict: Literal["passed", "blocked", "failed"]
    reason: str | None = Field(description="Why the review failed (null otherwise).")
    text: str = Field(description="The review as `interpreter review` prints it.")
    findings: list[dict[str, Any]] = Field(description="Every finding, located in the diff.")
    blocking: list[dict[str, Any]] = Field(description="The findings that block the gate.")


def _review_outcome(result: Any) -> CallToolResult:
    code = int(result.exit_code)
    verdict = "passed" if code == 0 else "blocked" if code == 7 else "failed"
    outcome = ReviewOutcome(
        threadId=result.thread_id,
        exitCode=code,
        verdict=verdict,
        reason=result.reason,
        text=result.text or "",
        findings=[finding.model_dump(mode="json") for finding in result.findings],
        blocking=[finding.model_dump(mode="json") for finding in result.blocking],
    )
    text = outcome.text or f"The review {verdict}" + (
        f": {outcome.reason}" if outcome.reason else "."
    )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=outcome.model_dump(mode="json"),
        # A blocking finding is the review's answer, not a failure of the tool.
        is_error=verdict == "failed",
    )


class Runs:
    """Starts and continues threads for the tools, remembering the options each thread this
    server started runs with, so a reply continues it the same way (a thread it did not start
    is resumed with the server's defaults)."""

    def __init__(self, defaults: ServerDefaults) -> None:
        self.defaults = defaults
        self._threads: dict[str, dict[str, Any]] = {}

    @staticmethod
    def _agent(options: dict[str, Any]) -> Agent:
        from oiexec.api import Agent

        try:
            return Agent(**options)
        except OiexecError as exc:
            raise ToolError(exc.render()) from exc

    def _options(
        self,
        *,
        model: str | None,
        cwd: str | None,
        profile: str | None,
        config: Mapping[str, Any] | None,
        harness: str | None = None,
        sandbox: SandboxMode | None = None,
    ) -> dict[str, Any]:
        """The Agent options of a call: what it asks for within the server's caps, the
        server's defaults for the rest."""
        defaults = self.defaults
        check_config(defaults, config or {})
        options: dict[str, Any] = {
            "model": model or defaults.model,
            "sandbox": sandbox,
            "cwd": choose_cwd(defaults, cwd),
            "harness": harness or defaults.harness,
            "profile": choose_profile(defaults, profile),
            "config": deep_merge(dict(defaults.config), dict(config or {})),
        }
        return {key: value for key, value in options.items() if value is not None}

    async def start(
        self,
        prompt: str,
        limits: Limits,
        ctx: Context[Any, Any] | None,
        *,
        cwd: str | None,
        sandbox: SandboxMode | None,
        model: str | None,
        profile: str | None,
        harness: str | None,
        config: Mapping[str, Any] | None,
    ) -> CallToolResult:
        options = self._options(
            model=model,
            cwd=cwd,
            profile=profile,
            config=config,
            harness=harness,
            sandbox=choose_sandbox(self.defaults, sandbox),
        )
        thread_id, result = await _run_turn(self._agent(options), None, prompt, limits, ctx)
        if thread_id:
            self._threads[thread_id] = options
        return _outcome(thread_id, result)

    async def review(
        self,
        ctx: Context[Any, Any] | None,
        *,
        target: dict[str, Any],
        cwd: str | None,
        model: str | None,
        profile: str | None,
        config: Mapping[str, Any] | None,
        limits: Limits,
    ) -> CallToolResult:
        # Read-only whatever the sandbox, as `interpreter review`.
        agent = self._agent(self._options(model=model, cwd=cwd, profile=profile, config=config))
        with _api_errors():
            result = await agent.areview(
                **target,
                max_turns=limits.max_turns,
                timeout=limits.timeout,
                on_event=_progress(ctx),
            )
        return _review_outcome(result)

    async def resume(
        self, thread_id: str, prompt: str, limits: Limits, ctx: Context[Any, Any] | None
    ) -> CallToolResult:
        defaults = self.defaults
        check_thread(defaults, thread_id, started_here=thread_id in self._threads)
        base = {
            "model": defaults.model,
            "sandbox": defaults.sandbox,
            # A thread this server did not start runs in the root when there is one.
            "cwd": str(defaults.root) if defaults.root is not None else None,
            "harness": defaults.harness,
            "profile": defaults.profile,
            "config": dict(defaults.config),
        }
        options = self._threads.get(thread_id) or {k: v for k, v in base.items() if v}
        agent = self._agent(dict(options))
        new_id, result = await _run_turn(agent, thread_id, prompt, limits, ctx)
        return _outcome(new_id or thread_id, result)


Sandbox = Annotated[
    SandboxMode | None,
    Field(description="Sandbox mode for the commands the agent runs."),
]
Cwd = Annotated[
    str | None,
    Field(description="Working directory (a git repository); relative to the server's."),
]
Config = Annotated[
    dict[str, Any] | None,
    Field(description="Config overrides: dotted keys to values, as -c takes them."),
]
