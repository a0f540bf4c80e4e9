"""The CI report of an exec run (output/ci): made from the run's result when the run ends,
or from the error when the command stops before the run starts (usage, config, interrupt).

`ci_reporting` is entered by the CLI once the flags have parsed, so every exit from there on
is reported, and hands the reporter to `run_exec`, which reports the run itself
(`exec_summary`); the reporter reports once, so the CLI's failure path adds nothing after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from oiexec.core.costs import spent_since
from oiexec.core.errors import ExitCode, failure_of
from oiexec.core.events import Usage
from oiexec.core.redact import redact
from oiexec.output.ci import CiReporter, RunSummary
from oiexec.runner.changes import refused_writes_warning
from oiexec.runner.reports import ReportPaths, junit_status, stderr_warning
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult

if TYPE_CHECKING:
    from oiexec.output.diff import Baseline

__all__ = ["ci_reporting", "exec_summary"]


@contextlib.contextmanager
def ci_reporting(paths: ReportPaths, command: str = "exec") -> Iterator[CiReporter | None]:
    """The run's CI reporter (None outside GitHub Actions), its step summary opened now; when
    the body raises before the run reported, the `::error` line and a short summary (outcome,
    exit code, reason) say why, and the error goes on to the CLI."""
    ci = CiReporter.open(stderr_warning, untrusted=paths.untrusted)
    if ci is None:
        yield None
        return
    try:
        yield ci
    except BaseException as exc:
        failure = failure_of(exc)
        if failure is not None:
            reason, code = failure
            # No report list: the error may be that one of them cannot be written.
            summary = RunSummary(command, junit_status(code), int(code), reason=redact(reason))
            ci.finish(summary)
        raise
    finally:
        ci.close()


def exec_summary(
    result: RunResult,
    request: ExecRequest,
    *,
    start: Usage,
    baseline: Baseline | None,
) -> RunSummary:
    """The summary of a run that started: `start` is the session's usage before it (a
    resumed run reports its own tokens and cost, and the session's total cost beside it),
    `baseline` the final diff's."""
    spent = spent_since(start, result.usage)
    ok = result.exit_code == ExitCode.SUCCESS
    reports = [
        ("--junit", request.junit),
        ("--diff", request.diff),
        # Written only after a completed turn (Codex's rule).
        ("-o", request.output_last_message if ok else None),
    ]
    return RunSummary(
        command="exec",
        outcome=junit_status(result.exit_code, result.limit),
        exit_code=int(result.exit_code),
        reason=result.failure,
        turns=result.turns,
        usage=spent,
        cost_usd=result.cost_usd,
        session_cost_usd=result.session_cost_usd,
        thread_id=result.thread_id,
        changed_files=None if baseline is None else baseline.changed,
        reports=[(flag, str(path)) for flag, path in reports if path is not None],
        # A read-only run asked to change code must not read as one that did.
        notes=[refused_writes_warning(result.refused_writes)] if result.refused_writes else [],
    )
