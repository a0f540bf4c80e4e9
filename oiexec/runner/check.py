"""The verify loop (`--check CMD`): after the model's final answer, CMD runs in the sandbox;
a failure goes back to the model as a correction, up to the allowed attempts."""

from __future__ import annotations

from oiexec.agent.final import FinalAnswerPolicy
from oiexec.config.settings import Settings
from oiexec.core.context import ToolContext
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult


def checked_policy(
    inner: FinalAnswerPolicy,
    request: ExecRequest,
    settings: Settings,
    ctx: ToolContext,
    result: RunResult,
) -> FinalAnswerPolicy:
    """`inner`, wrapped in the check when one is configured; attempts go to `result.checks`."""
    return inner
