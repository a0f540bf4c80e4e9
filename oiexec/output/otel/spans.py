"""A run as OpenTelemetry spans and metrics, from what the run already produces.

    oiexec.run                  the invocation (set-up, the turn, the reports)
      oiexec.turn               turn.started .. turn.completed / turn.failed
        oiexec.model_request    each request to the model (the wrapped ModelClient)
        oiexec.tool_call        each tool call the loop runs (the wrapped ToolGate)
          oiexec.command        each command_execution item it started

Every text attribute passes through `redact` and is cut to `TEXT_LIMIT`. The prompt
(`log_user_prompt`) and what the model produced (`log_outputs`: the final answer, tool
arguments, command output) are exported only when opted in; headers and keys never are.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode, set_span_in_context

from oiexec.core.errors import ExitCode
from oiexec.core.events import (
    CommandExecutionItem,
    ItemCompleted,
    ItemStarted,
    StreamError,
    ThreadEvent,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    Usage,
)
from oiexec.core.protocols import ModelClient, RetryCallback, ToolGate
from oiexec.core.redact import redact
from oiexec.output.otel.export import Exporters
from oiexec.output.otel.options import OtelOptions

if TYPE_CHECKING:
    from oiexec.core.costs import Spend
    from oiexec.core.types import ModelRequest, ModelResponse, ToolCall, ToolOutput

__all__ = ["TEXT_LIMIT", "OtelRun", "exit_class"]

#: Characters of one text attribute (a command line, an answer) kept.
TEXT_LIMIT = 4096
#: `gen_ai.token.type` of each Usage field, for the token metric.
_TOKEN_TYPES = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cached_input_tokens": "cached_input",
    "cache_write_input_tokens": "cache_write_input",
    "reasoning_output_tokens": "reasoning_output",
}


def exit_class(code: int) -> str:
    """The exit code's name in docs/exec.md's table, lower case (`success`, `max_turns`,
    `timeout`): what a dashboard groups runs by."""
    try:
        return ExitCode(code).name.lower()
    except ValueError:
        return "other"


def _text(value: str) -> str:
    return redact(value)[:TEXT_LIMIT]


def _usage_attributes(usage: Usage) -> dict[str, int]:
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "oiexec.usage.cached_input_tokens": usage.cached_input_tokens,
        "oiexec.usage.cache_write_input_tokens": usage.cache_write_input_tokens,
        "oiexec.usage.reasoning_output_tokens": usage.reasoning_output_tokens,
    }


class OtelRun:
    """One run's spans (an EventSink, plus the client and gate wrappers) and, at `finish`,
    its metrics and the export."""

    def __init__(self, options: OtelOptions, *, started: float, prompt: str | None) -> None:
        self._options = options
        self._exporters = Exporters(options)
        self._tracer = self._exporters.tracer
        self._lock = threading.Lock()
        self._prompt = prompt
        self._common = dict(options.span_attributes)
        # `started` is the run's time.monotonic() start: the root span covers the set-up too.
        start_ns = time.time_ns() - int(max(0.0, time.monotonic() - started) * 1e9)
        self._run = self._start("oiexec.run", None, {**options.run_attributes}, start_ns)
        self._turn: Span | None = None
        self._tool: Span | None = None
        self._commands: dict[str, Span] = {}
        self._command_count: dict[str, int] = {}
        #: The first failure while recording (`_guarded`), said once by `finish`.
        self._fault: str | None = None

    # -- spans ------------------------------------------------------------------------------

    def _start(
        self,
        name: str,
        parent: Span | None,
        attributes: dict[str, Any],
        start_ns: int | None = None,
    ) -> Span:
        context = set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            name,
            context=context,
            attributes={**self._common, **attributes},
            start_time=start_ns,
        )

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """One step of recording, under the lock; a failure in it (a bug here or in the SDK)
        is kept for one warning at the end, never raised into the run."""
        with self._lock:
            try:
                yield
            except Exception as exc:
                self._fault = self._fault or f"{type(exc).__name__}: {exc}"

    def _parent(self) -> Span:
        return self._tool or self._turn or self._run

    # -- EventSink ---------------------------------------------------------------------------

    def emit(self, event: ThreadEvent) -> None:
        with self._guarded():
            self._on_event(event)

    def _on_event(self, event: ThreadEvent) -> None:
        match event:
            case ThreadStarted(thread_id=thread_id):
                self._run.set_attribute("oiexec.thread_id", thread_id)
            case TurnStarted():
                attributes: dict[str, Any] = {}
                if self._options.log_user_prompt and self._prompt is not None:
                    attributes["oiexec.prompt"] = _text(self._prompt)
                self._turn = self._start("oiexec.turn", self._run, attributes)
            case ItemStarted(item=CommandExecutionItem() as item):
                self._commands[item.id] = self._start(
                    "oiexec.command", self._tool or self._turn or self._run,
                    {"oiexec.command": _text(item.command)},
                )  # fmt: skip
            case ItemCompleted(item=CommandExecutionItem() as item):
                self._command_done(item)
            case StreamError(message=message):
                self._parent().add_event("oiexec.retry", {"message": _text(message)})
            case TurnCompleted(usage=usage, cost_usd=cost):
                self._end_turn(usage, cost, None)
            case TurnFailed(error=error):
                self._end_turn(None, None, error.message)
            case _:
                pass

    def _command_done(self, item: CommandExecutionItem) -> None:
        span = self._commands.pop(item.id, None)
        if span is None:  # completed without a start (a declined command)
            span = self._start(
                "oiexec.command", self._parent(), {"oiexec.command": _text(item.command)}
            )
        span.set_attribute("oiexec.command.status", item.status)
        if item.exit_code is not None:
            span.set_attribute("process.exit.code", item.exit_code)
        if self._options.log_outputs:
            span.set_attribute("oiexec.command.output", _text(item.aggregated_output))
        if item.status != "completed":
            span.set_status(Status(StatusCode.ERROR, item.status))
        self._command_count[item.status] = self._command_count.get(item.status, 0) + 1
        span.end()

    def _end_turn(self, usage: Usage | None, cost: float | None, failure: str | None) -> None:
        if self._turn is None:
            return
        self._close_children("the turn ended")
        if usage is not None:
            self._turn.set_attributes(_usage_attributes(usage))
        if cost is not None:
            self._turn.set_attribute("oiexec.cost_usd", cost)
        if failure is not None:
            self._turn.set_status(Status(StatusCode.ERROR, _text(failure)))
        self._turn.end()
        self._turn = None

    def _close_children(self, why: str) -> None:
        """Ends what a failure left open (a limit raised inside a tool), marked as such."""
        for span in [*self._commands.values(), *([self._tool] if self._tool else [])]:
            span.set_status(Status(StatusCode.ERROR, why))
            span.end()
        self._commands.clear()
        self._tool = None

    def close(self) -> None:
        """The dispatcher's close; the export happens in `finish`."""

    # -- the model client and the tool gate --------------------------------------------------

    def client(self, inner: ModelClient) -> ModelClient:
        return _TracedClient(inner, self)

    def gate(self, inner: ToolGate | None) -> ToolGate:
        return _TracedGate(inner, self)

    def _model_span(self, request: ModelRequest) -> Span:
        span: Span = INVALID_SPAN
        with self._guarded():
            span = self._start(
                "oiexec.model_request",
                self._turn or self._run,
                {"gen_ai.operation.name": "chat", "gen_ai.request.model": request.model},
            )
        return span

    def _tool_started(self, call: ToolCall) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
        }
        if self._options.log_outputs:
            attributes["gen_ai.tool.call.arguments"] = _text(call.arguments)
        with self._guarded():
            if self._tool is not None:  # a hook raised in `before`: that call never ran
                self._tool.set_status(Status(StatusCode.ERROR, "the call did not run"))
                self._tool.end()
            self._tool = self._start("oiexec.tool_call", self._turn or self._run, attributes)

    def _tool_ended(self, output: ToolOutput | None, refusal: str | None = None) -> None:
        with self._guarded():
            span, self._tool = self._tool, None
            if span is None:
                return
            if refusal is not None:
                span.set_attribute("oiexec.tool.refused", True)
                span.set_status(Status(StatusCode.ERROR, "refused"))
            elif output is not None and output.is_error:
                span.set_status(Status(StatusCode.ERROR, "the tool returned an error"))
            span.end()

    # -- the end -----------------------------------------------------------------------------

    def finish(
        self,
        *,
        exit_code: int,
        failure: str | None,
        duration_s: float,
        spend: Spend,
        turns: int,
        final_message: str | None,
        warn: Callable[[str], None],
    ) -> None:
        """Ends the run span, records the metrics and exports both (bounded; never raises)."""
        try:
            with self._lock:
                self._end_turn(None, None, failure or "the run ended")
                self._close_children("the run ended")
                self._end_run(exit_code, failure, spend, turns, final_message)
            self._record_metrics(exit_code, duration_s, spend, turns)
        except Exception as exc:  # telemetry must never change how a run ends
            warn(f"otel: telemetry not recorded: {type(exc).__name__}: {exc}")
            return
        if self._fault is not None:
            warn(f"otel: telemetry incomplete: {_text(self._fault)}")
        self._exporters.send(warn)

    def _end_run(
        self,
        exit_code: int,
        failure: str | None,
        spend: Spend,
        turns: int,
        final_message: str | None,
    ) -> None:
        run = self._run
        run.set_attributes(
            {
                "oiexec.exit_code": exit_code,
                "oiexec.exit_class": exit_class(exit_code),
                "oiexec.turns": turns,
                **_usage_attributes(spend.usage),
            }
        )
        if spend.cost_usd is not None:
            run.set_attribute("oiexec.cost_usd", spend.cost_usd)
        if spend.session_cost_usd is not None:
            run.set_attribute("oiexec.session_cost_usd", spend.session_cost_usd)
        if self._options.log_outputs and final_message is not None:
            run.set_attribute("oiexec.final_message", _text(final_message))
        if exit_code != ExitCode.SUCCESS:
            run.set_status(Status(StatusCode.ERROR, _text(failure or exit_class(exit_code))))
        run.end()

    def _record_metrics(self, exit_code: int, duration_s: float, spend: Spend, turns: int) -> None:
        meter = self._exporters.meter
        common = {
            **self._options.run_attributes,
            "oiexec.exit_class": exit_class(exit_code),
        }
        meter.create_counter("oiexec.run.count", "{run}", "Runs, by exit class").add(
            1, {**common, "oiexec.exit_code": exit_code}
        )
        meter.create_histogram("oiexec.run.duration", "s", "Wall time of a run").record(
            duration_s, common
        )
        meter.create_counter(
            "oiexec.model_request.count", "{request}", "Requests made to the model"
        ).add(turns, common)
        tokens = meter.create_counter("oiexec.token.usage", "{token}", "Tokens, by type")
        for field, kind in _TOKEN_TYPES.items():
            tokens.add(getattr(spend.usage, field), {**common, "gen_ai.token.type": kind})
        if spend.cost_usd is not None:
            meter.create_counter("oiexec.cost.usage", "USD", "What runs cost, in USD").add(
                spend.cost_usd, common
            )
        commands = meter.create_counter("oiexec.command.count", "{command}", "Commands run")
        for status, count in sorted(self._command_count.items()):
            commands.add(count, {**common, "oiexec.command.status": status})


class _TracedClient:
    """The run's ModelClient with a span around each request."""

    def __init__(self, inner: ModelClient, run: OtelRun) -> None:
        self._inner = inner
        self._run = run

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        span = self._run._model_span(request)

        def retried(attempt: int, max_attempts: int, reason: str) -> None:
            span.add_event("oiexec.retry", {"attempt": attempt, "reason": _text(reason)})
            on_retry(attempt, max_attempts, reason)

        try:
            response = self._inner.respond(request, retried)
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, _text(f"{type(exc).__name__}: {exc}")))
            span.end()
            raise
        span.set_attributes(_usage_attributes(response.usage))
        if response.response_id:
            span.set_attribute("gen_ai.response.id", response.response_id)
        if response.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        span.end()
        return response

    def close(self) -> None:
        self._inner.close()


class _TracedGate:
    """The run's ToolGate (hooks, or none) with a span around each tool call."""

    def __init__(self, inner: ToolGate | None, run: OtelRun) -> None:
        self._inner = inner
        self._run = run

    def before(self, call: ToolCall) -> str | None:
        self._run._tool_started(call)
        refusal = self._inner.before(call) if self._inner is not None else None
        if refusal is not None:
            self._run._tool_ended(None, refusal)
        return refusal

    def after(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        if self._inner is not None:
            output = self._inner.after(call, output)
        self._run._tool_ended(output)
        return output
