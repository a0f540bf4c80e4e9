"""`--junit`: the run as a JUnit XML report, so CI systems show it next to their tests.

One `<testsuite name="oiexec">` with one `<testcase>` for the run. A failed run or a hit
limit is a `<failure>` whose `type` is the limit name (`max_turns`, `timeout`) or `failed`.
The commands the agent ran go to `<system-out>`; thread id, model, exit code and token
counts are suite properties. Every string is redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from junit_xml import TestCase, TestSuite, to_xml_report_string

from oiexec.core.events import Usage
from oiexec.core.redact import redact
from oiexec.output.reportfile import write_report

__all__ = ["RunReport", "case_name", "render_junit", "write_junit"]

RunStatus = Literal["success", "failed", "limit"]
_STATUSES: tuple[str, ...] = get_args(RunStatus)

_NAME_MAX = 100
_TAIL_LINES = 20
_TAIL_CHARS = 2_000


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

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, not {self.status!r}")


def case_name(prompt: str) -> str:
    """The first non-empty line of the prompt, shortened."""
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    if not line:
        return "exec"
    return line if len(line) <= _NAME_MAX else line[: _NAME_MAX - 1] + "…"


def _tail(output: str) -> str:
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


def render_junit(report: RunReport) -> str:
    case = TestCase(
        redact(case_name(report.prompt)),
        classname="oiexec.exec",
        elapsed_sec=round(report.duration_s, 3),
        stdout=redact(_system_out(report)) or None,
    )
    if report.status != "success":
        kind = report.limit_name if report.status == "limit" and report.limit_name else "failed"
        message = report.failure_message or f"run failed with exit code {report.exit_code}"
        case.add_failure_info(message=redact(message), output=redact(message), failure_type=kind)
    properties = {
        "thread_id": report.thread_id,
        "model": report.model,
        "exit_code": str(report.exit_code),
        "status": report.status,
        **{name: str(getattr(report.usage, name)) for name in Usage.model_fields},
    }
    suite = TestSuite(
        "oiexec",
        [case],
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        properties={key: redact(value) for key, value in properties.items()},
    )
    xml: str = to_xml_report_string([suite], prettyprint=True, encoding="utf-8")
    return xml


def write_junit(path: Path, report: RunReport) -> None:
    write_report(path, render_junit(report))
