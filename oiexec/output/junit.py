"""`--junit`: the run as a JUnit XML report, so CI systems show it next to their tests.

One `<testsuite name="oiexec">` with one `<testcase>` for the run. A failed run or a hit
limit is a `<failure>` whose `type` is its failure class (`budget`, `task`, `transient`, ...:
docs/exec.md "Failure classes"), which CI dashboards group failures by; the finer reason is
the suite property `failure_reason`: the limit name (`max_turns`, `timeout`), `check_failed`
(exit 8), `no_change` (exit 11, `--require-change`), `interrupted` (SIGINT or SIGTERM) or
`failed`. A run that failed before it started (usage or config error) is a case naming the
exit code. The commands the agent ran go to `<system-out>`; thread
id, model, exit code, token counts (the session's, as in `turn.completed`), `cost_usd` (this
run's cost in USD), `session_cost_usd` (the session's running total; both `unknown` when no
price is known) and `sandbox_refused_writes` (writes the read-only sandbox refused) are suite
properties, and refused writes are also a line in the case's
`<system-err>`, where CI viewers show it beside the result. Every string is redacted, before
any cut to a length.

With `--check`, a second test case (classname `oiexec.check`, named after the command) says
whether the check passed in the end; its `<system-out>` lists every attempt with its exit
code, time and output tail. A check that failed and was then fixed by the model is not a
`<failure>`: the run succeeded, and a red test in the CI's report would say otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from junit_xml import TestCase, TestSuite

from oiexec.core.costs import plain_usd
from oiexec.core.errors import ExitCode, failure_class_for_exit
from oiexec.core.events import Usage
from oiexec.core.redact import redact
from oiexec.output.junit_text import junit_text
from oiexec.output.reportfile import write_report

__all__ = [
    "CheckRun",
    "RunReport",
    "case_name",
    "render_junit",
    "spend_properties",
    "write_junit",
]

RunStatus = Literal["success", "failed", "limit", "interrupted"]
_STATUSES: tuple[str, ...] = get_args(RunStatus)

_NAME_MAX = 100
_TAIL_LINES = 20
_TAIL_CHARS = 2_000


@dataclass(frozen=True)
class CheckRun:
    """One run of the `--check` command."""

    attempt: int
    #: None when it never finished (killed, not started).
    exit_code: int | None
    output: str
    duration_s: float


@dataclass(frozen=True)
class RunReport:
    """What a finished run reports; built by the runner from its result."""

    prompt: str
    thread_id: str
    model: str
    #: One of `RunStatus`; a plain str so callers need not narrow their variables.
    status: str
    failure_message: str | None
    limit_name: str | None
    exit_code: int
    duration_s: float
    #: (command, exit code or None if it never finished, aggregated output)
    commands: Sequence[tuple[str, int | None, str]] = ()
    final_message: str | None = None
    usage: Usage = field(default_factory=Usage)
    #: The `--check` command, when the run had one, and each of its runs in order.
    check_command: str | None = None
    checks: Sequence[CheckRun] = ()
    #: Model requests this run made (a resumed run counts only its own).
    model_turns: int = 0
    #: Writes the read-only sandbox refused (runner/changes), and the warning that says so.
    refused_writes: int = 0
    refused_writes_note: str | None = None
    #: This run's cost and the session's total in USD; None when unknown.
    cost_usd: float | None = None
    session_cost_usd: float | None = None
    #: The failure's class (docs/exec.md "Failure classes"): the `<failure>`'s type. None
    #: when the run succeeded, or to derive it from the exit code.
    failure_class: str | None = None

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, not {self.status!r}")


def case_name(prompt: str) -> str:
    """The first non-empty line of the prompt, shortened (redacted first: a cut secret would
    leave a fragment that no longer matches)."""
    line = next((ln.strip() for ln in redact(prompt).splitlines() if ln.strip()), "")
    if not line:
        return "exec"
    return line if len(line) <= _NAME_MAX else line[: _NAME_MAX - 1] + "…"


def _tail(output: str) -> str:
    output = redact(output)  # before the cut, as everywhere
    lines = output.rstrip("\n").splitlines()
    kept = "\n".join(lines[-_TAIL_LINES:])
    if len(kept) > _TAIL_CHARS:
        kept = kept[-_TAIL_CHARS:]
    if kept != output.rstrip("\n"):
        kept = "[… output truncated …]\n" + kept
    return kept


def _system_out(report: RunReport) -> str:
    parts: list[str] = []
    for command, exit_code, output in report.commands:
        status = "still running" if exit_code is None else f"exit {exit_code}"
        block = f"$ {command}\n[{status}]"
        if output.strip():
            block += "\n" + _tail(output)
        parts.append(block)
    if report.final_message:
        parts.append("--- final message ---\n" + report.final_message)
    return "\n\n".join(parts)


def _check_case(report: RunReport, command: str) -> TestCase:
    """The check's test case: passing when its last run passed."""
    runs = report.checks
    total = sum(run.duration_s for run in runs)
    blocks = []
    for run in runs:
        status = "did not finish" if run.exit_code is None else f"exit {run.exit_code}"
        block = f"attempt {run.attempt}: [{status}] {run.duration_s:.2f}s"
        if run.output.strip():
            block += "\n" + _tail(run.output)
        blocks.append(block)
    case = TestCase(
        redact(f"check: {_shorten(command)}"),
        classname="oiexec.check",
        elapsed_sec=round(total, 3),
        stdout=redact("\n\n".join(blocks)) or None,
    )
    if not runs:
        case.add_skipped_info(message="the check did not run: the run ended before a final answer")
        return case
    last = runs[-1]
    if last.exit_code == 0:
        return case
    if report.exit_code == ExitCode.CHECK_FAILED and report.failure_message:
        message = report.failure_message
    elif last.exit_code is None:
        message = f"`{command}` did not finish (attempt {last.attempt})"
    else:
        message = f"`{command}` exited {last.exit_code} (attempt {last.attempt})"
    case.add_failure_info(
        # A check still failing is the task not done: the `task` class, as the run's case says.
        message=redact(message),
        output=redact(_tail(last.output)),
        failure_type="task",
    )
    return case


def _shorten(text: str) -> str:
    line = " ".join(redact(text).split())
    return line if len(line) <= _NAME_MAX else line[: _NAME_MAX - 1] + "…"


def render_junit(report: RunReport) -> str:
    case = TestCase(
        redact(case_name(report.prompt)),
        classname="oiexec.exec",
        elapsed_sec=round(report.duration_s, 3),
        stdout=redact(_system_out(report)) or None,
        stderr=redact(f"warning: {report.refused_writes_note}")
        if report.refused_writes_note
        else None,
    )
    if report.status != "success":
        kind = report.limit_name if report.status == "limit" and report.limit_name else "failed"
        if report.status == "interrupted":
            kind = "interrupted"
        if report.exit_code == ExitCode.CHECK_FAILED:
            kind = "check_failed"
        if report.exit_code == ExitCode.NO_CHANGE:
            kind = "no_change"
        message = report.failure_message or f"run failed with exit code {report.exit_code}"
        # The type is the class, which CI dashboards group by; the finer reason (which limit,
        # a failed check) is the `failure_reason` property and the message's words.
        failure_class = report.failure_class or failure_class_for_exit(report.exit_code)
        case.add_failure_info(
            message=redact(message),
            output=redact(message),
            failure_type=failure_class or "internal",
        )
        failure_properties = {"failure_class": failure_class or "internal", "failure_reason": kind}
    else:
        failure_properties = {}
    properties = {
        "thread_id": report.thread_id,
        "model": report.model,
        "exit_code": str(report.exit_code),
        "status": report.status,
        "model_turns": str(report.model_turns),
        "sandbox_refused_writes": str(report.refused_writes),
        **spend_properties(report.usage, report.cost_usd, report.session_cost_usd),
        **failure_properties,
    }
    cases = [case]
    if report.check_command is not None:
        cases.append(_check_case(report, report.check_command))
    suite = TestSuite(
        "oiexec",
        cases,
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        properties={key: redact(value) for key, value in properties.items()},
    )
    return junit_text([suite])


def spend_properties(
    usage: Usage, cost_usd: float | None, session_cost_usd: float | None
) -> dict[str, str]:
    """Tokens and cost as JUnit properties (exec's report and review's)."""
    return {
        **{name: str(getattr(usage, name)) for name in Usage.model_fields},
        "cost_usd": plain_usd(cost_usd),
        "session_cost_usd": plain_usd(session_cost_usd),
    }


def write_junit(path: Path, report: RunReport) -> None:
    write_report(path, render_junit(report))
