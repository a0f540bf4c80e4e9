"""What one run ended with: the exit code and what the reports are made of."""

from __future__ import annotations

from dataclasses import dataclass, field

from oiexec.core.errors import ExitCode, FailureClass
from oiexec.core.events import CommandExecutionItem, Usage


@dataclass(frozen=True)
class CheckAttempt:
    """One run of the `--check` command after a final answer."""

    attempt: int
    command: str
    exit_code: int | None
    output: str
    duration_s: float

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


@dataclass
class RunResult:
    exit_code: ExitCode
    thread_id: str | None = None
    final_message: str | None = None
    failure: str | None = None
    #: The failure's class (docs/exec.md "Failure classes"); None when the run succeeded.
    failure_class: FailureClass | None = None
    limit: str | None = None
    commands: list[CommandExecutionItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    #: What this invocation cost in USD (None: no price is known for the model), and the
    #: session's running total, earlier runs of a resumed or forked session included.
    cost_usd: float | None = None
    session_cost_usd: float | None = None
    duration_s: float = 0.0
    #: Model requests made in this invocation.
    turns: int = 0
    #: Each `--check` run, in order.
    checks: list[CheckAttempt] = field(default_factory=list)
    #: Writes the read-only sandbox refused (file tools and commands): runner/changes.
    refused_writes: int = 0
