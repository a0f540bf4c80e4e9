"""The files a run leaves for CI: the last message, the change as a patch, a JUnit report.

A report never turns a finished run into a crash: every failure here is a warning.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.core.errors import ExitCode
from oiexec.core.events import CommandExecutionItem, ItemCompleted, ThreadEvent
from oiexec.core.redact import redact
from oiexec.output.reportfile import write_report
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult

if TYPE_CHECKING:
    from oiexec.output.diff import Baseline

Warn = Callable[[str], None]


def stderr_warning(text: str) -> None:
    """A warning on stderr, for when no event stream carries it (before `thread.started`,
    or from the review's reports)."""
    sys.stderr.write(redact(f"warning: {text}") + "\n")
    sys.stderr.flush()


def save_report(flag: str, path: Path, data: str | bytes, warn: Warn) -> None:
    """Writes the report `flag` names; a failure is a warning, never the run's error."""
    try:
        write_report(path, data)
    except OSError as exc:
        warn(f"could not write {flag} {path}: {exc.strerror or exc}")


class CommandCollector:
    """Remembers completed commands for the JUnit report."""

    def __init__(self) -> None:
        self.commands: list[CommandExecutionItem] = []

    def emit(self, event: ThreadEvent) -> None:
        if isinstance(event, ItemCompleted) and isinstance(event.item, CommandExecutionItem):
            self.commands.append(event.item)

    def close(self) -> None:
        pass


def capture_baseline(
    request: ExecRequest, warn: Warn, stack: contextlib.ExitStack
) -> Baseline | None:
    """The workspace as it was before the run, when `--diff` asks for the change."""
    if not request.diff:
        return None
    from oiexec.output.diff import Baseline

    try:
        baseline = Baseline.capture(request.cwd)
    except Exception as exc:  # a report must never stop the task itself
        warn(f"--diff disabled: could not snapshot the workspace: {exc}")
        return None
    stack.callback(baseline.close)
    return baseline


def write_reports(
    request: ExecRequest, result: RunResult, baseline: Baseline | None, *, model: str, warn: Warn
) -> None:
    ok = result.exit_code == ExitCode.SUCCESS
    # The last message is written only after a completed turn, so a stale file never passes
    # for an answer.
    if request.output_last_message and ok:
        _write_bytes(request.output_last_message, (result.final_message or "").encode(), warn)
    if request.diff and baseline is not None:
        try:
            patch = baseline.diff_bytes()
        except Exception as exc:
            warn(f"could not write --diff {request.diff}: {exc}")
        else:
            _write_bytes(request.diff, _redact_bytes(patch), warn)
    if request.junit:
        _write_junit(request.junit, request, result, model=model, warn=warn)


def _write_junit(
    path: Path, request: ExecRequest, result: RunResult, *, model: str, warn: Warn
) -> None:
    from oiexec.output.junit import CheckRun, RunReport, write_junit

    # A check that never ran (the run ended first) is known here only from the flag.
    check_command = result.checks[-1].command if result.checks else request.check
    report = RunReport(
        prompt=request.prompt,
        thread_id=result.thread_id or "",
        model=model,
        status=junit_status(result.exit_code, result.limit),
        failure_message=result.failure,
        limit_name=result.limit,
        exit_code=int(result.exit_code),
        duration_s=result.duration_s,
        commands=[(c.command, c.exit_code, c.aggregated_output) for c in result.commands],
        final_message=result.final_message,
        usage=result.usage,
        check_command=check_command,
        checks=[CheckRun(c.attempt, c.exit_code, c.output, c.duration_s) for c in result.checks],
        model_turns=result.turns,
    )
    try:
        write_junit(path, report)  # write_report makes the missing directories
    except OSError as exc:
        warn(f"could not write --junit {path}: {exc}")


def junit_status(code: int, limit: str | None = None) -> str:
    """The JUnit report's `status` for a run that ended with `code` (and hit `limit`)."""
    if code == ExitCode.SUCCESS:
        return "success"
    if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
        return "interrupted"
    return "limit" if limit else "failed"


def _redact_bytes(data: bytes) -> bytes:
    # Redact without decoding the whole patch: binary hunks must stay byte-exact.
    out = []
    for line in data.split(b"\n"):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            out.append(line)
        else:
            out.append(redact(text).encode("utf-8"))
    return b"\n".join(out)


def _write_bytes(path: Path, data: bytes, warn: Warn) -> None:
    try:
        write_report(path, data)
    except OSError as exc:
        warn(f"could not write {path}: {exc.strerror or exc}")
