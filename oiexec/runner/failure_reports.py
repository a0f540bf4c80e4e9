"""Reports for a run that ended before its thread started (a usage or config error, an
interrupt while stdin was read), so a CI step that publishes `--junit` or uploads SARIF always
finds a file that says what went wrong.

Once the flags have parsed, every exit leaves the reports they name:

- `--junit`: one failing test case carrying the error and the exit code;
- `--diff`: an empty patch (the run changed nothing), replacing any stale one;
- review `--sarif`: a log with no results whose invocation is marked unsuccessful: GitHub
  code scanning records a failed analysis instead of closing every open alert, which an
  ordinary empty log would do;
- review `--markdown`: the error, in place of a review.

`-o` keeps Codex's rule: it is written only after a completed turn.

The report files are opened here, first of all (runner/reports.open_reports), and the run
writes through what was opened: the body gets them. A path that can never take a report (a
FIFO, a directory) is a usage error, reported in the other reports.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Literal

from oiexec.core.errors import FailureClass, failure_class_of, failure_of
from oiexec.core.redact import redact
from oiexec.runner.reports import (
    ReportFiles,
    ReportPaths,
    Warn,
    junit_status,
    open_reports,
    save_report,
    stderr_warning,
)

__all__ = ["ReportPaths", "reports_on_failure", "write_review_failure"]

Kind = Literal["exec", "review"]


@contextlib.contextmanager
def reports_on_failure(
    paths: ReportPaths, *, kind: Kind, name: str, model: str = "", warn: Warn | None = None
) -> Iterator[ReportFiles]:
    """Opens the report files (the body writes through them) and writes the failure reports
    when the body raises (usage, config, interrupt, internal error), then lets the error go on
    to the CLI, which prints it and exits with its code."""
    warn = warn or stderr_warning
    files, refused = open_reports(paths)
    try:
        if refused is not None:
            raise refused
        yield files
    except BaseException as exc:
        failure = failure_of(exc)
        if failure is not None:
            message, code = failure
            _write(files, kind, name, model, (redact(message), failure_class_of(exc)), code, warn)
        raise
    finally:
        files.close()


def _write(
    files: ReportFiles,
    kind: Kind,
    name: str,
    model: str,
    failure: tuple[str, FailureClass],
    code: int,
    warn: Warn,
) -> None:
    message, failure_class = failure
    save_report(files.diff, b"", warn)
    if kind == "review":
        write_review_failure(files, message, code, warn=warn)
    elif files.junit is not None:
        from oiexec.output.junit import RunReport, render_junit

        report = RunReport(
            prompt=name,
            thread_id="",
            model=model,
            status=junit_status(code),
            failure_message=f"{message} (exit code {code})",
            failure_class=failure_class,
            limit_name=None,
            exit_code=int(code),
            duration_s=0.0,
        )
        save_report(files.junit, render_junit(report), warn)


def write_review_failure(files: ReportFiles, message: str, code: int, *, warn: Warn) -> None:
    """The review's reports when no review came back: the run failed or never started."""
    from oiexec.review.render.junit import render_failure_junit
    from oiexec.review.render.markdown import render_failure_markdown
    from oiexec.review.render.sarif import render_failure_sarif

    if files.junit is not None:
        save_report(files.junit, render_failure_junit(message, code), warn)
    if files.sarif is not None:
        save_report(files.sarif, render_failure_sarif(message, code), warn)
    if files.markdown is not None:
        save_report(files.markdown, render_failure_markdown(message, code), warn)
