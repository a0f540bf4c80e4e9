"""The files a run leaves for CI: the last message, the change as a patch, a JUnit report
(and the review's SARIF and Markdown).

Every report file is opened when the run starts, before the model runs (`open_reports`; see
output/reportfile for what that fixes), and written through what was opened. A path that can
never take a report (a FIFO, a directory) is a usage error then; once the run is under way, a
report never turns a finished run into a crash: every failure to write one is a warning and
leaves the exit code alone.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.core.errors import ExitCode, OiexecError, UsageError
from oiexec.core.events import CommandExecutionItem, ItemCompleted, ThreadEvent
from oiexec.core.redact import redact
from oiexec.output.reportfile import ReportTarget
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult

if TYPE_CHECKING:
    from oiexec.output.diff import Baseline

Warn = Callable[[str], None]

#: How each report is spelled on the command line, for messages.
_LABELS = {
    "last_message": "-o",
    "diff": "--diff",
    "junit": "--junit",
    "sarif": "--sarif",
    "markdown": "--markdown",
}


@dataclass(frozen=True)
class ReportPaths:
    """The report files named on the command line."""

    junit: Path | None = None
    diff: Path | None = None
    sarif: Path | None = None
    markdown: Path | None = None
    last_message: Path | None = None
    #: Where commands may have written, now or in an earlier run (`untrusted_roots`): no
    #: symlink beneath them is followed on the way to a report.
    untrusted: tuple[Path, ...] = ()


def untrusted_roots(
    cwd: str | os.PathLike[str] | None, add_dirs: Iterable[Path]
) -> tuple[Path, ...]:
    """The directories whose content a command of this run or an earlier one, or the change
    under review, may have written: the working directory and its repository, the extra
    writable roots, and the temp directories (writable by commands under Landlock). A link
    there is nobody's choice but theirs, so a report path never follows one (known before the
    config is, so the defaults are taken, not the policy's roots)."""
    from oiexec.git import find_project_root

    base = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    project = find_project_root(base) if base.is_dir() else None
    roots = [base, *([project] if project else []), *(Path(os.path.abspath(d)) for d in add_dirs)]
    return (*roots, Path(tempfile.gettempdir()), Path("/tmp"))


@dataclass(frozen=True)
class ReportFiles:
    """The report files of one run, each opened before the model runs (`open_reports`)."""

    junit: ReportTarget | None = None
    diff: ReportTarget | None = None
    sarif: ReportTarget | None = None
    markdown: ReportTarget | None = None
    last_message: ReportTarget | None = None

    def only(self, *names: str) -> ReportFiles:
        """These reports, the others left to someone else (the review writes its own)."""
        return replace(self, **{f.name: None for f in fields(self) if f.name not in names})

    def close(self) -> None:
        for f in fields(self):
            target = getattr(self, f.name)
            if target is not None:
                target.close()


def open_reports(paths: ReportPaths) -> tuple[ReportFiles, UsageError | None]:
    """Opens every report `paths` names. A path that cannot take a report is left out and its
    error returned (the first one), so the reports that could be opened still tell why the
    run stopped."""
    opened: dict[str, ReportTarget] = {}
    refused: UsageError | None = None
    for name, label in _LABELS.items():
        path = getattr(paths, name)
        if path is None:
            continue
        try:
            opened[name] = ReportTarget.open(path, label, untrusted=paths.untrusted)
        except UsageError as exc:
            refused = refused or exc
    return ReportFiles(**opened), refused


def request_reports(request: ExecRequest) -> ReportFiles:
    """The exec reports of `request`, opened; raises the `UsageError` of a refused path."""
    paths = ReportPaths(
        junit=request.junit,
        diff=request.diff,
        last_message=request.output_last_message,
        untrusted=untrusted_roots(request.cwd, request.add_dirs),
    )
    return open_all_reports(paths)


def open_all_reports(paths: ReportPaths) -> ReportFiles:
    """Every report of `paths`, opened; raises the `UsageError` of a refused path (none is
    left open then)."""
    files, refused = open_reports(paths)
    if refused is not None:
        files.close()
        raise refused
    return files


def stderr_warning(text: str) -> None:
    """A warning on stderr, for when no event stream carries it (before `thread.started`,
    or from the review's reports)."""
    sys.stderr.write(redact(f"warning: {text}") + "\n")
    sys.stderr.flush()


def save_report(target: ReportTarget | None, data: str | bytes, warn: Warn) -> None:
    """Writes the report `target` (if any); a failure is a warning, never the run's error."""
    if target is None:
        return
    try:
        target.write(data)
    except OSError as exc:
        warn(f"could not write {target.label} {target.path}: {exc.strerror or exc}")


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
    request: ExecRequest, files: ReportFiles, warn: Warn, stack: contextlib.ExitStack
) -> Baseline | None:
    """The workspace as it was before the run, when `--diff` or `--require-change` asks for
    the change."""
    if files.diff is None and not request.require_change:
        return None
    from oiexec.output.diff import Baseline

    try:
        baseline = Baseline.capture(request.cwd)
    except Exception as exc:
        if request.require_change:  # without the start, no change can be told from none
            raise OiexecError(
                f"--require-change: could not snapshot the workspace to compare with: {exc}"
            ) from exc
        # A report must never stop the task itself.
        warn(f"--diff disabled: could not snapshot the workspace: {exc}")
        return None
    stack.callback(baseline.close)
    return baseline


def write_reports(
    files: ReportFiles,
    request: ExecRequest,
    result: RunResult,
    baseline: Baseline | None,
    *,
    model: str,
    warn: Warn,
) -> None:
    ok = result.exit_code == ExitCode.SUCCESS
    # The last message is written only after a completed turn, so a stale file never passes
    # for an answer.
    if ok:
        save_report(files.last_message, (result.final_message or "").encode(), warn)
    if files.diff is not None and baseline is not None:
        try:
            patch = baseline.diff_bytes()
        except Exception as exc:
            warn(f"could not write --diff {files.diff.path}: {exc}")
        else:
            save_report(files.diff, _redact_bytes(patch), warn)
            if baseline.omitted:
                shown = ", ".join(o.path for o in baseline.omitted[:3])
                more = len(baseline.omitted) - 3
                warn(
                    f"--diff {files.diff.path}: {shown}{f' and {more} more' if more > 0 else ''} "
                    "not inlined (too big for the patch; listed at its top)"
                )
    if files.junit is not None:
        _write_junit(files.junit, request, result, model=model, warn=warn)


def _write_junit(
    target: ReportTarget, request: ExecRequest, result: RunResult, *, model: str, warn: Warn
) -> None:
    from oiexec.output.junit import CheckRun, RunReport, render_junit
    from oiexec.runner.changes import refused_writes_warning

    # A check that never ran (the run ended first) is known here only from the flag.
    check_command = result.checks[-1].command if result.checks else request.check
    report = RunReport(
        prompt=request.prompt,
        thread_id=result.thread_id or "",
        model=model,
        status=junit_status(result.exit_code, result.limit),
        failure_message=result.failure,
        failure_class=result.failure_class,
        limit_name=result.limit,
        exit_code=int(result.exit_code),
        duration_s=result.duration_s,
        commands=[(c.command, c.exit_code, c.aggregated_output) for c in result.commands],
        final_message=result.final_message,
        usage=result.usage,
        check_command=check_command,
        checks=[CheckRun(c.attempt, c.exit_code, c.output, c.duration_s) for c in result.checks],
        model_turns=result.turns,
        cost_usd=result.cost_usd,
        session_cost_usd=result.session_cost_usd,
        refused_writes=result.refused_writes,
        refused_writes_note=refused_writes_warning(result.refused_writes)
        if result.refused_writes
        else None,
    )
    save_report(target, render_junit(report), warn)


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
