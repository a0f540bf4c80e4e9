"""The verify loop (`--check CMD`): after the model's final answer, CMD runs in the sandbox;
a failure goes back to the model as a correction, up to the allowed attempts.

The check is a model-run command in every way that matters to a user: it goes through the
one command lifecycle (`oiexec.tools.command`), so it is a `command_execution` item, runs in
the run's sandbox with the run's environment and working directory, and is bounded by the
run's `--timeout` as well as by `check_timeout`. The run succeeds only when the check passes:
the last failure ends it with `CheckFailed` (exit 8). A check the sandbox refuses to run is
never a pass (exit 6), and the run's deadline reached during a check is a timeout (exit 5).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oiexec.agent.final import FinalAnswerPolicy, Retry
from oiexec.config.settings import Settings
from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.errors import CheckFailed, RunTimedOut, SandboxUnavailable
from oiexec.core.redact import redact
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import CheckAttempt, RunResult
from oiexec.tools.command import (
    NotStarted,
    RunningCommand,
    deadline_bound,
    setup_failed,
    start_command,
)
from oiexec.tools.process import ProcessRegistry
from oiexec.tools.truncate import cut_middle

__all__ = ["CheckSpec", "check_header", "checked_policy", "excerpt", "resolve_check"]

#: What the model is shown of a failing check: the first and last lines (a failing test
#: suite names its failures at the end, a build its first error at the start), within a
#: character budget so one enormous line cannot flood the context.
HEAD_LINES = 40
TAIL_LINES = 40
MAX_CHARS = 12_000

_TIME_LIMIT = "time limit reached: the run exceeded --timeout while the check `{}` was running"


@dataclass(frozen=True)
class CheckSpec:
    """The check of one run: the flag wins over config, field by field."""

    command: str
    max_attempts: int
    timeout_s: float


def resolve_check(request: ExecRequest, settings: Settings) -> CheckSpec | None:
    command = request.check or settings.check
    if command is None:
        return None
    return CheckSpec(
        command=command,
        max_attempts=request.max_attempts or settings.check_max_attempts,
        timeout_s=settings.check_timeout,
    )


def check_header(request: ExecRequest, settings: Settings) -> list[tuple[str, str]]:
    """The header line naming the check, when there is one."""
    spec = resolve_check(request, settings)
    if spec is None:
        return []
    attempts = "attempt" if spec.max_attempts == 1 else "attempts"
    return [("check", f"{spec.command} (up to {spec.max_attempts} {attempts})")]


def checked_policy(
    inner: FinalAnswerPolicy,
    request: ExecRequest,
    settings: Settings,
    ctx: ToolContext,
    result: RunResult,
) -> FinalAnswerPolicy:
    """`inner`, wrapped in the check when one is configured; attempts go to `result.checks`."""
    spec = resolve_check(request, settings)
    if not getattr(inner, "checkable", False):
        # The review (or any caller with its own policy) decides alone when it is done.
        if request.check is not None or request.max_attempts is not None:
            ctx.warn("--check and --max-attempts apply to `exec` runs only; ignoring them here")
        return inner
    if spec is None:
        if request.max_attempts is not None:
            ctx.warn("--max-attempts has no effect without --check (or `check` in config)")
        return inner
    runner = _CheckRunner(spec, ctx, result.checks.append)
    return _CheckedAnswer(inner, spec, runner)


class _CheckedAnswer:
    """Accepts a final answer only once the check passes after it."""

    def __init__(self, inner: FinalAnswerPolicy, spec: CheckSpec, runner: _CheckRunner) -> None:
        self._inner = inner
        self._spec = spec
        self._runner = runner
        self._attempts = 0
        #: Final answers since the last check failure: the inner policy (`--output-schema`)
        #: gets its own correction for each fresh answer, not one for the whole run.
        self._answers = 0

    def accept(self, text: str, attempt: int) -> str | Retry:
        self._answers += 1
        verdict = self._inner.accept(text, self._answers)
        if isinstance(verdict, Retry):
            return verdict
        self._attempts += 1
        check = self._runner.run(self._attempts)
        if check.passed:
            return verdict
        spec = self._spec
        if self._attempts >= spec.max_attempts:
            plural = "attempt" if self._attempts == 1 else "attempts"
            raise CheckFailed(
                f"check still failing after {self._attempts} {plural}: "
                f"`{spec.command}` {_verdict(check, spec)}"
            )
        self._answers = 0
        return Retry(
            _correction(check, spec),
            notice=f"the check `{spec.command}` {_verdict(check, spec)} (attempt "
            f"{check.attempt} of {spec.max_attempts}); its output went back to the model",
        )

    def present(self, text: str, items: ItemEmitter) -> None:
        self._inner.present(text, items)


class _CheckRunner:
    """Runs the check command through the command lifecycle and records each attempt."""

    def __init__(
        self, spec: CheckSpec, ctx: ToolContext, record: Callable[[CheckAttempt], None]
    ) -> None:
        self._spec = spec
        self._ctx = ctx
        self._record = record
        self._registry = ProcessRegistry()
        # Whatever the check left behind dies with the run at the latest.
        ctx.cleanup.callback(self._registry.close_all)
        # As the model's commands: a non-login bash keeps the PATH the pipeline set up.
        self._shell = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"

    def run(self, attempt: int) -> CheckAttempt:
        spec, ctx = self._spec, self._ctx
        if ctx.remaining() == 0:
            raise RunTimedOut(_TIME_LIMIT.format(spec.command))
        started = time.monotonic()
        argv = [self._shell, "-c", spec.command]
        try:
            running = start_command(
                ctx, self._registry, argv, cwd=ctx.cwd, env=dict(ctx.env), rules=False
            )
        except NotStarted as exc:
            self._record(CheckAttempt(attempt, spec.command, None, exc.message, 0.0))
            if exc.declined:
                raise SandboxUnavailable(
                    f"{exc.message}; the check `{spec.command}` could not run"
                ) from exc
            raise CheckFailed(f"the check `{spec.command}` could not start: {exc.message}") from exc
        code: int | None = None
        note: str | None = None
        try:
            code, note = self._wait(running)
        finally:
            # Also when the deadline or a signal cut the wait short: the item completes and
            # the attempt is reported before the turn ends.
            output = self._finish(running)
            if note:
                output = f"{output.rstrip()}\n[{note}]".lstrip("\n")
            check = CheckAttempt(attempt, spec.command, code, output, time.monotonic() - started)
            self._record(check)
        if setup_failed(running.prepared, code):
            raise SandboxUnavailable(
                f"sandbox unavailable: the sandbox could not start the check `{spec.command}` "
                f"(launcher exit status {code})"
            )
        return check

    def _wait(self, running: RunningCommand) -> tuple[int | None, str | None]:
        """The exit status, or None and why the check was killed."""
        spec, session = self._spec, running.session
        wait_s, by_deadline = deadline_bound(self._ctx, spec.timeout_s)
        code = session.wait(wait_s)
        if code is not None:
            return code, None
        running.killed = True
        session.kill()
        if by_deadline:
            raise RunTimedOut(_TIME_LIMIT.format(spec.command))
        return None, f"killed: the check did not finish within {spec.timeout_s:g} seconds"

    @staticmethod
    def _finish(running: RunningCommand) -> str:
        """Complete the item (killing what still runs) and return the check's output."""
        session = running.session
        if session.exit_code is None:
            running.killed = True
            session.kill()
        output = redact(session.output_so_far())
        running.finish()
        # Background children of the check must not linger into the model's next turn.
        session.close(grace=0)
        return output


def _verdict(check: CheckAttempt, spec: CheckSpec) -> str:
    if check.exit_code is None:
        return f"did not finish within {spec.timeout_s:g} seconds"
    return f"exited {check.exit_code}"


def _correction(check: CheckAttempt, spec: CheckSpec) -> str:
    """The user message after a failed check: what failed, what to do, and the evidence."""
    shown, cut = excerpt(check.output)
    what = f"its output ({cut})" if cut else "its output"
    return (
        f"The check `{spec.command}` {_verdict(check, spec)} after your final answer "
        f"(attempt {check.attempt} of {spec.max_attempts}), so the task is not done. "
        "Find and fix the cause, then give your final answer again; the check runs again "
        f"then. This is {what}:\n"
        f"--- check output ---\n{shown}\n--- end of check output ---"
    )


def excerpt(output: str) -> tuple[str, str | None]:
    """The first and last lines of `output` within the character budget, and a note of what
    was left out (None when nothing was)."""
    lines = output.rstrip("\n").splitlines()
    notes: list[str] = []
    if len(lines) > HEAD_LINES + TAIL_LINES:
        cut = len(lines) - HEAD_LINES - TAIL_LINES
        lines = [*lines[:HEAD_LINES], f"[... {cut} lines cut ...]", *lines[-TAIL_LINES:]]
        notes.append(f"the first {HEAD_LINES} and last {TAIL_LINES} lines; {cut} cut")
    text = "\n".join(lines) if lines else "(no output)"
    if len(text) > MAX_CHARS:
        text = cut_middle(text, MAX_CHARS)
        notes.append(f"cut to about {MAX_CHARS} characters")
    return text, "; ".join(notes) or None
