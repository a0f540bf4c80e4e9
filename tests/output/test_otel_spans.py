"""The run's spans where the scripted server cannot easily lead a run, in-process against the
local collector: a call the hooks refuse, a command declined before it started, a tool still
running when a limit ends the run, a retried and a failed model request."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from oiexec.core.costs import Spend
from oiexec.core.errors import ExitCode, ProviderError
from oiexec.core.events import (
    CommandExecutionItem,
    ItemCompleted,
    ThreadError,
    ThreadStarted,
    TurnFailed,
    TurnStarted,
    Usage,
)
from oiexec.core.protocols import RetryCallback
from oiexec.core.types import ModelRequest, ModelResponse, ToolCall, ToolOutput
from oiexec.output.otel.options import Collector, OtelOptions
from oiexec.output.otel.spans import OtelRun
from tests.support.otlp_receiver import OtlpReceiver, Span


@pytest.fixture
def collector() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


def _run(collector: OtlpReceiver) -> OtelRun:
    options = OtelOptions(
        traces=Collector(f"{collector.url}/v1/traces"),
        metrics=None,
        environment="test",
        service_version="0",
    )
    run = OtelRun(options, started=time.monotonic(), prompt="secret prompt")
    run.emit(ThreadStarted(thread_id="t-1"))
    run.emit(TurnStarted())
    return run


def _finish(run: OtelRun, code: ExitCode, failure: str | None = None) -> list[str]:
    warnings: list[str] = []
    run.finish(
        exit_code=int(code),
        failure=failure,
        duration_s=0.1,
        spend=Spend(Usage(), 0.0, Usage(), 0.0),
        turns=1,
        final_message=None,
        warn=warnings.append,
    )
    return warnings


def _named(collector: OtlpReceiver, name: str) -> list[Span]:
    return [span for span in collector.spans() if span.name == name]


class _Refusing:
    def before(self, call: ToolCall) -> str | None:
        return "blocked by a hook"

    def after(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        raise AssertionError("a refused call is not run")


class _Client:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        on_retry(1, 5, "503 overloaded")
        if self.fail:
            raise ProviderError("the provider failed: 500")
        return ModelResponse(items=(), usage=Usage(input_tokens=7, output_tokens=3))

    def close(self) -> None:
        pass


def test_a_refused_call_and_a_declined_command_are_spans_marked_as_such(
    collector: OtlpReceiver,
) -> None:
    run = _run(collector)
    call = ToolCall(call_id="c1", name="shell", arguments='{"command": ["rm", "-rf", "/"]}')
    assert run.gate(_Refusing()).before(call) == "blocked by a hook"
    declined = CommandExecutionItem(id="item_1", command="rm -rf /", status="declined")
    run.emit(ItemCompleted(item=declined))
    run.emit(TurnFailed(error=ThreadError(message="stopped")))

    assert _finish(run, ExitCode.FAILED, "stopped") == []

    [tool] = _named(collector, "oiexec.tool_call")
    assert tool.attributes["oiexec.tool.refused"] is True
    assert tool.status_code == 2
    [command] = _named(collector, "oiexec.command")
    [turn] = _named(collector, "oiexec.turn")
    assert command.attributes["oiexec.command.status"] == "declined"
    assert command.parent_span_id == turn.span_id
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # not without log_outputs


def test_a_tool_still_running_when_a_limit_ends_the_run_is_closed_as_failed(
    collector: OtlpReceiver,
) -> None:
    run = _run(collector)
    run.gate(None).before(ToolCall(call_id="c1", name="exec_command", arguments="{}"))
    # The tool raised the limit: `after` never came, the runner ended the turn.
    run.emit(TurnFailed(error=ThreadError(message="cost limit reached: --max-cost 0.01")))

    _finish(run, ExitCode.MAX_COST, "cost limit reached: --max-cost 0.01")

    [tool] = _named(collector, "oiexec.tool_call")
    [run_span] = _named(collector, "oiexec.run")
    assert tool.status_code == 2 and tool.status_message == "the turn ended"
    assert run_span.attributes["oiexec.exit_class"] == "max_cost"
    assert run_span.status_message == "cost limit reached: --max-cost 0.01"


def test_model_requests_carry_their_retries_usage_and_failure(collector: OtlpReceiver) -> None:
    run = _run(collector)
    retries: list[int] = []
    request = ModelRequest(model="m-1", instructions="", history=())

    response = run.client(_Client(fail=False)).respond(request, lambda a, *_: retries.append(a))
    with pytest.raises(ProviderError):
        run.client(_Client(fail=True)).respond(request, lambda *_: None)
    _finish(run, ExitCode.FAILED, "the provider failed: 500")

    assert response.usage.input_tokens == 7 and retries == [1]  # passed through unchanged
    ok, failed = _named(collector, "oiexec.model_request")
    assert ok.events == ["oiexec.retry"] and failed.events == ["oiexec.retry"]
    assert ok.attributes["gen_ai.request.model"] == "m-1"
    assert ok.attributes["gen_ai.usage.input_tokens"] == 7
    assert ok.status_code == 0
    assert failed.status_code == 2 and "the provider failed: 500" in failed.status_message
    assert b"secret prompt" not in collector.of("/v1/traces")[0].body
