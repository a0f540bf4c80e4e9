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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ExitCode, Interrupted, OiexecError
from oiexec.core.redact import redact
from oiexec.runner.reports import Warn, junit_status, save_report, stderr_warning

__all__ = ["ReportPaths", "reports_on_failure", "write_review_failure"]

Kind = Literal["exec", "review"]


@dataclass(frozen=True)
class ReportPaths:
    """The report files named on the command line."""

    junit: Path | None = None
    diff: Path | None = None
    sarif: Path | None = None
    markdown: Path | None = None


@contextlib.contextmanager
def reports_on_failure(
    paths: ReportPaths, *, kind: Kind, name: str, model: str = "", warn: Warn | None = None
) -> Iterator[None]:
    """Writes the failure reports when the body raises (usage, config, interrupt, internal
    error), then lets the error go on to the CLI, which prints it and exits with its code."""
    warn = warn or stderr_warning
    try:
        yield
    except OiexecError as exc:
        # With the hint: the report is often all a reader of a CI run looks at.
        _write(paths, kind, name, model, redact(exc.render()), exc.exit_code, warn)
        raise
    except Interrupted as exc:
        _write(paths, kind, name, model, exc.message, exc.exit_code, warn)
        raise
    except KeyboardInterrupt:
        _write(paths, kind, name, model, "interrupted by SIGINT", ExitCode.INTERRUPTED, warn)
        raise
    except Exception as exc:
        message = redact(f"internal error: {type(exc).__name__}: {exc}")
        _write(paths, kind, name, model, message, ExitCode.FAILED, warn)
        raise


def _write(
    paths: ReportPaths, kind: Kind, name: str, model: str, message: str, code: int, warn: Warn
) -> None:
    if paths.diff is not None:
        save_report("--diff", paths.diff, b"", warn)
    if kind == "review":
        write_review_failure(paths, message, code, warn=warn)
    elif paths.junit is not None:
        from oiexec.output.junit import RunReport, render_junit

        report = RunReport(
            prompt=name,
            thread_id="",
            model=model,
            status=junit_status(code),
            failure_message=f"{message} (exit code {code})",
            limit_name=None,
            exit_code=int(code),
            duration_s=0.0,
        )
        save_report("--junit", paths.junit, render_junit(report), warn)


def write_review_failure(paths: ReportPaths, message: str, code: int, *, warn: Warn) -> None:
    """The review's reports when no review came back: the run failed or never started."""
    from oiexec.review.render.junit import render_failure_junit
    from oiexec.review.render.markdown import render_failure_markdown
    from oiexec.review.render.sarif import render_failure_sarif

    if paths.junit is not None:
        save_report("--junit", paths.junit, render_failure_junit(message, code), warn)
    if paths.sarif is not None:
        save_report("--sarif", paths.sarif, render_failure_sarif(message, code), warn)
    if paths.markdown is not None:
        markdown = render_failure_markdown(message, code)
        save_report("--markdown", paths.markdown, markdown, warn)
