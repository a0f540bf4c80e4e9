"""A minimal harness for driving the agent loop in tests: given tools, no prompts of note."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import HarnessStep, Observation, Tool
from oiexec.core.types import HistoryItem, ModelRequest, ModelResponse, ToolCall, ToolOutput


class TinyHarness:
    """The `Harness` seam at its smallest: the given tools, done when the model calls none."""

    id = "tiny"

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = list(tools)

    def instructions(self) -> str:
        return "be tiny"

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def initial_context(self, cwd: Path, policy: SandboxPolicy) -> list[HistoryItem]:
        return []

    def environment_context(self, cwd: Path, policy: SandboxPolicy) -> HistoryItem | None:
        return None

    def prepare_request(self, request: ModelRequest) -> ModelRequest:
        return request

    def interpret(self, response: ModelResponse) -> HarnessStep:
        """The function-calling rule: done when the model calls no tool."""
        if response.tool_calls:
            return HarnessStep(calls=tuple(response.tool_calls))
        return HarnessStep(final=True)

    def observe(self, call: ToolCall, output: ToolOutput) -> Observation:
        return Observation((output,))

    def compaction_prompts(self) -> tuple[str, str] | None:
        return None  # never compacts

    def finish_turn(self, ctx: ToolContext) -> None:
        pass

    def close(self) -> None:
        pass
