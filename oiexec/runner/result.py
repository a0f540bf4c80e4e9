"""What one run ended with: the exit code and what the reports are made of."""

from __future__ import annotations

from dataclasses import dataclass, field

from oiexec.core.errors import ExitCode
from oiexec.core.events import CommandExecutionItem, Usage


@dataclass
class RunResult:
    exit_code: ExitCode
    thread_id: str | None = None
    final_message: str | None = None
    failure: str | None = None
    limit: str | None = None
    commands: list[CommandExecutionItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    duration_s: float = 0.0
