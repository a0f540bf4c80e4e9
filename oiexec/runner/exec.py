"""The composition root of `interpreter exec`: config, provider, sandbox, session and output
mode are put together here; runner/thread_run.py then opens the harness and client, runs the
loop, and turns the outcome into reports and an exit code.

Problems found before the thread starts (config, usage, missing key: see runner/prepare.py)
raise `OiexecError`, after the warnings found so far are printed; everything after
`thread.started` ends as `turn.completed` or `turn.failed`, an interrupt included.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from oiexec.core.protocols import EventProcessor
from oiexec.output.human import HumanProcessor, use_color
from oiexec.output.jsonl import JsonlProcessor
from oiexec.runner.changes import (
    check_require_change,
)
from oiexec.runner.extras import check_hook_files
from oiexec.runner.prepare import RunHooks, StartupWarnings, prepare
from oiexec.runner.reports import (
    ReportFiles,
    request_reports,
)
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult
from oiexec.runner.sessions import (
    open_session,
)
from oiexec.runner.thread_run import ThreadRun

if TYPE_CHECKING:
    from oiexec.output.ci import CiReporter

__all__ = ["RunHooks", "run_exec"]


def run_exec(
    request: ExecRequest,
    hooks: RunHooks | None = None,
    *,
    prompt: Callable[[], str] | None = None,
    processor: EventProcessor | None = None,
    reports: ReportFiles | None = None,
    ci: CiReporter | None = None,
) -> RunResult:
    """Runs one exec invocation end to end and returns its outcome (never raises after
    `thread.started`).

    `prompt`, when given, reads the prompt (stdin) only once everything that can be checked
    without it has passed; otherwise `request.prompt` is the prompt. `processor`, when given,
    is shown the run instead of stdout/stderr (the Python API's pipe to its caller).
    `reports` are the report files the caller opened; without them the request's are opened
    here, first (a report's place is fixed before the model runs: runner/reports). `ci`, in
    GitHub Actions, is told how the run ended (runner/ci_report).
    """
    warnings = StartupWarnings()
    with contextlib.ExitStack() as stack:
        try:
            if reports is None:
                reports = request_reports(request)
                stack.callback(reports.close)
            prepared = prepare(request, hooks or RunHooks(), warnings)
            # First in, last out: the backend closes after every command has ended.
            stack.callback(prepared.sandbox.close)
            # The catalog's answer is taken at the end if nothing needed it (so the memo has it
            # for the next run); a run cut short does not wait for it.
            stack.push(prepared.pending_facts.settle)
            # Every run reports its cost: the price is looked up from now on, beside the run.
            prepared.pending_facts.begin()
            if request.require_change:  # the policy is known only now (config, session)
                check_require_change(prepared.policy)
            # A broken hooks.json is a config error like any other: before the thread starts.
            check_hook_files(prepared)
            if prepared.failures is not None and not prepared.failures.tests:
                from oiexec.runner.from_junit import nothing_to_fix

                warnings.flush()
                model = prepared.config.settings.model
                return nothing_to_fix(prepared.failures, prepared.request, reports, ci, model=model)
            prepared = prepared.with_prompt(prompt)  # within --timeout
            request = prepared.request
            session = open_session(
                request, prepared.config, prepared.provider_id, prepared.continued
            )
        except BaseException:
            warnings.flush()
            raise
        stack.callback(session.store.close)
        # The one place the output mode is looked at.
        if processor is None:
            processor = (
                JsonlProcessor(sys.stdout, sys.stderr)
                if request.json
                else HumanProcessor(
                    sys.stderr,
                    sys.stdout,
                    color=use_color(request.color, sys.stderr),
                    # As Codex's exec: hidden from the transcript, still `reasoning` items in JSONL.
                    show_reasoning=not prepared.config.settings.hide_agent_reasoning,
                )
            )
        return ThreadRun(prepared, session, processor, stack, warnings, reports, ci).execute()
