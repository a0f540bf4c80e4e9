"""The native harness: Codex's tools and conventions, with this project's prompt."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import Tool
from oiexec.core.types import HistoryItem, Message, ModelResponse
from oiexec.harness.data import load_spec, read_harness_file
from oiexec.tools.exec_command import ExecCommandTool, WriteStdinTool
from oiexec.tools.patch_tool import ApplyPatchTool
from oiexec.tools.process import ProcessRegistry
from oiexec.tools.update_plan import UpdatePlanTool


class NativeHarness:
    """Tools `exec_command`, `write_stdin`, `apply_patch` (freeform) and `update_plan`; the
    run ends on a response without tool calls."""

    id = "native"

    def __init__(
        self,
        *,
        user_instructions: str | None,
        environment_context: str,
        freeform_patch: bool = True,
        output_token_limit: int = 10_000,
    ) -> None:
        self._prompt = read_harness_file(self.id, load_spec(self.id).prompt.system)
        self._user_instructions = user_instructions
        self._environment_context = environment_context
        self.processes = ProcessRegistry()
        self.plan = UpdatePlanTool()
        patch = ApplyPatchTool(freeform=freeform_patch)
        self._tools: list[Tool] = [
            ExecCommandTool(self.processes, patch, output_token_limit=output_token_limit),
            WriteStdinTool(self.processes, output_token_limit=output_token_limit),
            patch,
            self.plan,
        ]

    def instructions(self) -> str:
        return self._prompt

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def initial_context(self, cwd: Path, policy: SandboxPolicy) -> list[HistoryItem]:
        items: list[HistoryItem] = []
        if self._user_instructions:
            items.append(Message(role="user", text=self._user_instructions))
        items.append(Message(role="user", text=self._environment_context))
        return items

    def is_complete(self, response: ModelResponse) -> bool:
        return not response.tool_calls

    def finish_turn(self, ctx: ToolContext) -> None:
        self.processes.close_all()
        self.plan.finish(ctx)

    def close(self) -> None:
        self.processes.close_all()
