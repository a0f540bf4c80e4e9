"""One exec run's thread, from `thread.started` to its last report: the tool context, MCP
servers, extras, harness and client are opened, the loop runs under the run's deadline, and
its outcome (`turn.completed`, or `turn.failed` with its failure class) becomes the session's
record, the reports, the CI summary, `notify` and telemetry. runner/exec.py composes what
comes before (config, sandbox, session, output mode) and hands it over.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from oiexec.agent.final import PlainAnswer, SchemaAnswer
from oiexec.core.context import ItemEmitter
from oiexec.core.costs import Spend
from oiexec.core.errors import (
    ExitCode,
    FailureClass,
    Interrupted,
    LimitExceeded,
    OiexecError,
    SandboxUnavailable,
)
from oiexec.core.events import (
    ThreadError,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    Usage,
)
from oiexec.core.protocols import EventProcessor, EventSink, Harness
from oiexec.core.redact import redact
from oiexec.core.types import HistoryItem
from oiexec.core.version import __version__
from oiexec.output.dispatch import Dispatcher
from oiexec.output.human import HumanProcessor
from oiexec.runner.changes import (
    count_refused_writes,
    refused_writes_warning,
    require_change,
)
from oiexec.runner.check import check_header, checked_policy
from oiexec.runner.loop_setup import open_runlog
from oiexec.runner.network_report import NetworkReport
from oiexec.runner.policy import command_env
from oiexec.runner.prepare import Prepared, StartupWarnings
from oiexec.runner.reports import (
    CommandCollector,
    ReportFiles,
    capture_baseline,
    write_reports,
)
from oiexec.runner.result import RunResult
from oiexec.runner.run_cost import PRICE_WAIT_S, price_run
from oiexec.runner.sessions import (
    OpenedSession,
    SessionSink,
    outcome_status,
)
from oiexec.runner.signals import deadline_alarm
from oiexec.runner.telemetry import open_telemetry

if TYPE_CHECKING:
    from oiexec.agent.loop import AgentLoop
    from oiexec.core.context import ToolContext
    from oiexec.output.ci import CiReporter
    from oiexec.output.diff import Baseline
    from oiexec.runner.extras import Extras

__all__ = ["ThreadRun"]


class ThreadRun:
    """One thread's turn, from `thread.started` to the last report."""

    def __init__(
        self,
        prepared: Prepared,
        session: OpenedSession,
        processor: EventProcessor,
        stack: contextlib.ExitStack,
        warnings: StartupWarnings,
        reports: ReportFiles,
        ci: CiReporter | None = None,
    ) -> None:
        self.p = prepared
        self.reports = reports
        self.ci = ci
        self.request = prepared.request
        self.session = session
        self.store = session.store
        self.processor = processor
        self.warn = processor.warning
        self.stack = stack
        self.collector = CommandCollector()
        sinks: list[EventSink] = [processor, self.collector, SessionSink(self.store)]
        self.runlog = open_runlog(prepared, self.warn)
        if self.runlog is not None:
            sinks.append(self.runlog)
        #: `[otel]`: spans fed by the events, the client and the gate (None: not configured);
        #: what it cannot use is said with the config notes, after the header.
        self.telemetry = open_telemetry(prepared, warnings.notes.append)
        if self.telemetry is not None:
            sinks.append(self.telemetry)
        self.dispatcher = Dispatcher(sinks)
        self.network = NetworkReport(prepared.sandbox.network_gate, self.warn, self.runlog)
        stack.callback(self.dispatcher.close)
        self.items = ItemEmitter(self.dispatcher.emit)
        self.result = RunResult(exit_code=ExitCode.SUCCESS, thread_id=self.store.thread_id)
        timeout = self.request.timeout
        self.deadline = prepared.started + timeout if timeout else None
        self.tracker = prepared.sandbox
        self.startup_warnings = warnings
        self.harness: Harness | None = None
        self.changes = list(prepared.changes)
        self.extras: Extras | None = None
        self.ctx: ToolContext | None = None
        #: What the run spent, priced when it ends (`_record_usage`).
        self.spend = Spend(Usage(), 0.0, session.usage, session.cost_usd)

    def execute(self) -> RunResult:
        self._header()
        self.dispatcher.emit(ThreadStarted(thread_id=self.store.thread_id))
        baseline: Baseline | None = None
        usage = self.session.usage
        loop: AgentLoop | None = None
        try:
            self._warnings()
            baseline = capture_baseline(self.request, self.reports, self.warn, self.stack)
            loop, history = self._build()
            self.dispatcher.emit(TurnStarted())
            self.store.append("event_msg", {"type": "task_started"})
            with deadline_alarm(self.deadline):
                outcome = loop.run(history, usage)
            usage = outcome.usage
            loop.harness.finish_turn(loop.ctx)
            if self.tracker.refusals:
                # The model may have worked around the refusal, but what was asked could not
                # be done as configured: say so with the sandbox exit code.
                raise SandboxUnavailable(f"sandbox unavailable: {self.tracker.refusals[0]}")
            if self.request.require_change and baseline is not None:
                require_change(baseline)
            self.result.final_message = outcome.final_message
            self._record_usage(usage)
            self.dispatcher.emit(
                TurnCompleted(
                    usage=usage,
                    cost_usd=self.result.cost_usd,
                    session_cost_usd=self.result.session_cost_usd,
                )
            )
        except OiexecError as exc:
            usage = loop.usage if loop is not None and loop.steps else usage  # spent so far
            self.result.limit = exc.limit if isinstance(exc, LimitExceeded) else None
            self._fail(exc.exit_code, redact(exc.message), exc.failure_class, usage)
        except Exception as exc:
            # The run boundary: whatever broke, the turn ends as `turn.failed` with exit 1,
            # the session and reports are still written, and the traceback goes to the log.
            if self.runlog is not None:
                self.runlog.exception("run.crashed", exc)
            message = redact(f"internal error: {type(exc).__name__}: {exc}")
            self._fail(ExitCode.FAILED, message, "internal", usage)
        except (KeyboardInterrupt, Interrupted) as exc:
            # Codex ends an interrupted turn silently; a CI consumer needs the stream to end,
            # so it is `turn.failed` naming the signal, with exit 130 (SIGINT) or 143 (SIGTERM).
            interrupt = exc if isinstance(exc, Interrupted) else Interrupted("SIGINT")
            self.warn(interrupt.message)
            # An interrupted run waits for no price.
            self._fail(interrupt.exit_code, interrupt.message, "interrupted", usage, wait_s=0.0)
        finally:
            self.result.duration_s = time.monotonic() - self.p.started
            self.store.append(
                "event_msg",
                {
                    "type": "task_complete",
                    "last_agent_message": self.result.final_message,
                    "duration_ms": int(self.result.duration_s * 1000),
                    # What `sessions list/show` report and a pipeline decides a retry on.
                    "status": outcome_status(self.result.exit_code),
                    "exit_code": int(self.result.exit_code),
                    "failure": self.result.failure,
                    "cost_usd": self.result.cost_usd,
                },
            )
        self.result.usage = usage
        self.network.finish()
        self.processor.spent(self.spend)
        self.result.turns = loop.steps if loop is not None else 0
        self.result.commands = self.collector.commands
        self._refused_writes()
        if self.runlog is not None:
            self.runlog.note(
                "run.exit",
                exit_code=int(self.result.exit_code),
                duration_s=round(self.result.duration_s, 3),
            )
        write_reports(
            self.reports,
            self.request,
            self.result,
            baseline,
            model=self.p.config.settings.model,
            warn=self.warn,
        )
        self._ci_report(baseline)
        if self.result.final_message is not None and self._ok():
            self.processor.final_output(self.result.final_message)
        self._notify()
        if self.telemetry is not None:  # last: the answer is out; the export is bounded
            self.telemetry.finish(
                exit_code=int(self.result.exit_code),
                failure=self.result.failure,
                duration_s=self.result.duration_s,
                spend=self.spend,
                turns=self.result.turns,
                final_message=self.result.final_message,
                warn=self.warn,
            )
        return self.result

    def _fail(
        self,
        code: ExitCode,
        message: str,
        failure_class: FailureClass,
        usage: Usage,
        *,
        wait_s: float = PRICE_WAIT_S,
    ) -> None:
        """How every failed run ends its turn: open work closed, the result says why and of
        what class, what was spent recorded, and `turn.failed` carrying both."""
        self._close_open_work()
        self.result.exit_code = code
        self.result.failure = message
        self.result.failure_class = failure_class
        self._record_usage(usage, wait_s=wait_s)
        failed = ThreadError(message=message)
        self.dispatcher.emit(TurnFailed(error=failed, failure_class=failure_class))

    def _refused_writes(self) -> None:
        """Writes the read-only sandbox refused: said at the end of every run that had any,
        whatever its outcome (a run that was asked to change code and could not must not
        pass for one that did), on stderr, in the run log and (via the result) in JUnit."""
        if self.ctx is None:
            return
        count = count_refused_writes(
            self.p.policy, self.ctx.refused_writes, self.collector.commands
        )
        self.result.refused_writes = count
        if count:
            self.warn(refused_writes_warning(count))
            if self.runlog is not None:
                self.runlog.note("sandbox.refused_writes", count=count)

    def _ci_report(self, baseline: Baseline | None) -> None:
        """GitHub Actions: `::error` on failure and the step summary, after the reports (the
        summary lists them, and the changed files of the diff they computed)."""
        if self.ci is None:
            return
        from oiexec.runner.ci_report import exec_summary

        summary = exec_summary(
            self.result,
            self.request,
            start=self.session.usage,
            baseline=baseline,
        )
        self.ci.finish(summary)

    def _notify(self) -> None:
        """`notify`, after a completed turn only (as Codex); it never changes the outcome."""
        if self.extras is None or not self._ok():
            return
        try:
            self.extras.run_notify(
                thread_id=self.store.thread_id,
                cwd=self.request.cwd,
                prompt=self.request.prompt,
                final_message=self.result.final_message,
                warn=self.warn,
            )
        except Exception as exc:  # a notifier must never turn a success into a failure
            self.warn(f"notify failed: {exc}")

    def _warnings(self) -> None:
        """Config, flag and sandbox warnings (collected by `prepare`), before `turn.started`."""
        for text in self.startup_warnings.take():
            self.processor.startup_warning(text, self.items)
        for text in self.startup_warnings.take_notes():  # no `error` item: see config.effects
            self.warn(text)
            if self.runlog is not None:
                self.runlog.note("config.no_effect", message=text)
        verb = "fork" if self.request.fork_from else "resume"
        for change in self.changes:
            if change.sandbox:
                # Narrowed or widened: a consumer of the JSON stream must be able to see it.
                self.processor.startup_warning(change.line(verb), self.items)
            else:
                self.processor.warning(change.line(verb))

    def _sandbox_summary(self) -> str:
        summary = self.p.policy.summary()
        backend = self.tracker.backend
        return summary if backend == "none" else f"{summary} ({backend})"

    def _close_open_work(self) -> None:
        """Kill what is still running and complete its items before the final event, as
        Codex does: a consumer never sees an item finish after the turn."""
        if self.harness is None:
            return
        try:
            self.harness.close()
        except Exception as exc:  # cleanup must not mask why the run failed
            self.warn(f"cleanup failed: {exc}")

    def _ok(self) -> bool:
        return self.result.exit_code == ExitCode.SUCCESS

    # -- set-up ---------------------------------------------------------------------------

    def _header(self) -> None:
        settings = self.p.config.settings
        self.processor.header(
            f"oiexec v{__version__}",
            [
                ("workdir", str(self.request.cwd)),
                ("model", settings.model),
                ("provider", self.p.provider_id),
                ("approval", "never"),
                ("sandbox", self._sandbox_summary()),
                ("reasoning effort", settings.model_reasoning_effort or "default"),
                *([] if self.p.hooks.final else check_header(self.request, settings)),
                ("session id", self.store.thread_id),
            ],
        )

    def _build(self) -> tuple[AgentLoop, list[HistoryItem]]:
        from oiexec.core.context import ToolContext
        from oiexec.harness.registry import HarnessInputs, build_harness
        from oiexec.runner.extras import open_extras
        from oiexec.runner.fallbacks import open_client
        from oiexec.runner.loop_setup import new_loop, opening_history
        from oiexec.runner.mcp import start_mcp_servers
        from oiexec.runner.stall_watch import watch_stalls
        from oiexec.session.index import FILE_STATE

        p, request, settings = self.p, self.request, self.p.config.settings
        thread_id = self.store.thread_id
        env = command_env(
            settings,
            p.policy,
            provider_env_key=p.provider.env_key,
            extra={"OPENINTERPRETER_THREAD_ID": thread_id},
        )
        ctx = ToolContext(
            cwd=request.cwd,
            sandbox=self.tracker,
            items=self.items,
            env=env,
            warn=self.warn,
            deadline=self.deadline,
            command_rules=p.command_rules,
        )
        self.stack.enter_context(ctx.cleanup)
        self.ctx = ctx
        mcp_tools = start_mcp_servers(p, ctx, self.stack, self.runlog)
        extras = open_extras(
            p, ctx, self.stack, self.runlog, thread_id=thread_id, transcript_path=self.store.path
        )
        self.extras = extras
        harness = build_harness(
            HarnessInputs(
                settings=settings,
                provider_id=p.provider_id,
                provider=p.provider,
                cwd=request.cwd,
                home=p.config.home,
                policy=p.policy,
                extra_tools=mcp_tools,
                skills=extras.skills,
                warn=self.warn,
                # Read-before-write state lives in the rollout, so `resume` keeps it.
                file_journal=lambda entry: self.store.append(
                    "event_msg", {"type": FILE_STATE, **entry}
                ),
                restored_files=p.continued.file_state if p.continued is not None else (),
                harness_id=p.harness_id,
                instructions=p.instructions,
            )
        )
        ctx.cleanup.callback(harness.close)
        self.harness = harness
        extras.know_tools(harness.tools())
        client = open_client(
            p.provider_id,
            p.provider,
            p.api_key,
            model=settings.model,
            fallbacks=p.fallbacks,
            extra_headers={"session-id": thread_id, "thread-id": thread_id},
            # The human transcript's heartbeat while the model has not answered.
            wait_observer=self.processor if isinstance(self.processor, HumanProcessor) else None,
            items=self.items,
            store=self.store,
            runlog=self.runlog,
        )
        self.stack.callback(client.close)
        if self.telemetry is not None:
            client = self.telemetry.client(client)

        history = opening_history(
            p, harness, self.store, list(self.session.history), extras, self.warn, self.changes
        )

        final = extras.final_policy(
            checked_policy(
                p.hooks.final
                or (SchemaAnswer(p.output_schema) if p.output_schema else PlainAnswer()),
                request,
                settings,
                ctx,
                self.result,
            )
        )
        loop = new_loop(
            p,
            client=client,
            harness=harness,
            ctx=ctx,
            emit=self.dispatcher.emit,
            store=self.store,
            on_step=self.processor.step,
            final=final,
            gate=extras.gate if self.telemetry is None else self.telemetry.gate(extras.gate),
            deadline=self.deadline,
        )
        watch_stalls(loop, p, self.collector.commands, self.warn, self.stack)
        return loop, history

    def _record_usage(self, usage: Usage, *, wait_s: float = PRICE_WAIT_S) -> None:
        """The thread's usage and cost so far, in the rollout and the result (before the
        last event, which carries them)."""
        self.spend = price_run(
            self.p.pending_facts,
            self.session.usage,
            usage,
            self.session.cost_usd,
            wait_s=wait_s,
            note=self._cost_note,
        )
        self.result.cost_usd = self.spend.cost_usd
        self.result.session_cost_usd = self.spend.session_cost_usd
        self.store.append(
            "event_msg",
            {
                "type": "token_count",
                "total_token_usage": usage.model_dump(),
                "session_cost_usd": self.result.session_cost_usd,
            },
        )

    def _cost_note(self, text: str) -> None:
        self.warn(text)
        if self.runlog is not None:
            self.runlog.note("cost.unknown", message=text)
