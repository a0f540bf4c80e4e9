"""The agent loop at its seams: a scripted in-memory client, a tiny harness, real tool context."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from oiexec.agent.loop import AgentLoop, LoopLimits, ModelOptions
from oiexec.core.context import ToolContext
from oiexec.core.errors import MaxTurnsExceeded, RunTimedOut
from oiexec.core.events import ThreadEvent, Usage
from oiexec.core.protocols import HarnessStep, Observation, RetryCallback, Tool
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolOutput,
    ToolSpec,
)
from tests.agent.stubs import TinyHarness
from tests.conftest import MakeToolContext


class ScriptedClient:
    def __init__(self, *responses: ModelResponse) -> None:
        self.responses = list(responses)
        self.requests: list[ModelRequest] = []

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        self.requests.append(request)
        return self.responses.pop(0)

    def close(self) -> None:
        pass


class BrokenTool:
    spec = ToolSpec(name="broken", description="always crashes", parameters={"type": "object"})

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        raise KeyError("a bug")


class SlowTool:
    spec = ToolSpec(name="slow", description="trips the deadline", parameters={"type": "object"})

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        raise RunTimedOut("time limit reached")


def _call(name: str) -> ModelResponse:
    return ModelResponse(items=(ToolCall(call_id="c1", name=name, arguments="{}"),))


def _answer(text: str) -> ModelResponse:
    return ModelResponse(items=(Message(role="assistant", text=text),))


def _loop(
    tool_context: MakeToolContext,
    tmp_path: Path,
    client: ScriptedClient,
    tools: Sequence[Tool],
    **limits: object,
) -> AgentLoop:
    events: list[ThreadEvent] = []
    ctx = tool_context(tmp_path, events=events)
    return AgentLoop(
        client=client,
        harness=TinyHarness(tools),
        ctx=ctx,
        emit=events.append,
        record=lambda _item: None,
        options=ModelOptions(model="m"),
        limits=LoopLimits(**limits),  # type: ignore[arg-type]
    )


def test_a_crashing_tool_costs_one_call_not_the_run(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    client = ScriptedClient(_call("broken"), _answer("worked around it"))
    outcome = _loop(tool_context, tmp_path, client, [BrokenTool()]).run([], Usage())
    assert outcome.final_message == "worked around it"
    output = client.requests[1].history[-1]
    assert isinstance(output, ToolOutput) and output.is_error
    assert "internal error in tool `broken`: KeyError" in output.output


def test_limits_raised_inside_a_tool_end_the_run(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    client = ScriptedClient(_call("slow"), _answer("never"))
    with pytest.raises(RunTimedOut):
        _loop(tool_context, tmp_path, client, [SlowTool()]).run([], Usage())


def test_unknown_tool_is_reported_to_the_model(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    client = ScriptedClient(_call("nope"), _answer("ok"))
    _loop(tool_context, tmp_path, client, [BrokenTool()]).run([], Usage())
    output = client.requests[1].history[-1]
    assert isinstance(output, ToolOutput)
    assert "no tool named `nope`" in output.output and "broken" in output.output


def test_max_turns_counts_model_requests(tmp_path: Path, tool_context: MakeToolContext) -> None:
    client = ScriptedClient(_call("broken"), _call("broken"), _answer("late"))
    with pytest.raises(MaxTurnsExceeded, match="--max-turns 2"):
        _loop(tool_context, tmp_path, client, [BrokenTool()], max_turns=2).run([], Usage())
    assert len(client.requests) == 2


class RecordingTool:
    spec = ToolSpec(name="rec", description="records its calls", parameters={"type": "object"})

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        self.calls.append(call)
        return ToolOutput(call_id=call.call_id, output="ran")


class RecordingGate:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def before(self, call: ToolCall) -> str | None:
        self.seen.append(call.call_id)
        return None

    def after(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        return output


def test_a_refused_call_reaches_neither_hooks_nor_tool_and_is_kept_as_a_stub(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    huge = ToolCall(call_id="huge", name="rec", arguments='{"a": "' + "x" * 2_000_000 + '"}')
    bad = ToolCall(call_id="bad", name="rec", arguments="{oops")
    good = ToolCall(call_id="good", name="rec", arguments="{}")
    client = ScriptedClient(ModelResponse(items=(huge, bad, good)), _answer("ok"))
    tool, gate = RecordingTool(), RecordingGate()
    recorded: list[HistoryItem] = []
    warnings: list[str] = []
    ctx = tool_context(tmp_path, warn=warnings.append)
    loop = AgentLoop(
        client=client,
        harness=TinyHarness([tool]),
        ctx=ctx,
        emit=lambda _event: None,
        record=recorded.append,
        options=ModelOptions(model="m"),
        gate=gate,
    )
    assert loop.run([], Usage()).final_message == "ok"
    assert [call.call_id for call in tool.calls] == gate.seen == ["good"]
    outputs = {i.call_id: i for i in client.requests[1].history if isinstance(i, ToolOutput)}
    assert outputs["huge"].is_error and "2,000,009 bytes" in outputs["huge"].output
    assert outputs["bad"].is_error and "not a JSON object" in outputs["bad"].output
    assert outputs["good"].output == "ran"
    calls = [item for item in recorded if isinstance(item, ToolCall)]
    assert [c.call_id for c in calls] == ["huge", "bad", "good"]
    assert all(len(c.arguments) < 2_000 for c in calls)
    assert len(warnings) == 2


class RuleHarness(TinyHarness):
    """Product rules the loop must take from the harness, not decide itself: a text-action
    format with corrections, an answer the harness rewrites, a tool whose output ends the run,
    and a request that offers only some of the tools."""

    def prepare_request(self, request: ModelRequest) -> ModelRequest:
        offered = tuple(spec for spec in request.tools if spec.name != "rec")
        return request.model_copy(update={"tools": offered})

    def interpret(self, response: ModelResponse) -> HarnessStep:
        text = response.final_text or ""
        if text == "no action":
            return HarnessStep(feedback=(Message(role="user", text="one action, please"),))
        if text.startswith("ANSWER: "):
            return HarnessStep(final=True, final_text=text.removeprefix("ANSWER: "))
        return super().interpret(response)

    def observe(self, call: ToolCall, output: ToolOutput) -> Observation:
        if call.name == "rec":
            return Observation((Message(role="user", text="submitted"),), submission="the diff")
        return Observation((output,))


def _rule_loop(
    tool_context: MakeToolContext, tmp_path: Path, client: ScriptedClient, tool: RecordingTool
) -> AgentLoop:
    return AgentLoop(
        client=client,
        harness=RuleHarness([tool, BrokenTool()]),
        ctx=tool_context(tmp_path),
        emit=lambda _event: None,
        record=lambda _item: None,
        options=ModelOptions(model="m"),
    )


def test_a_harness_correction_is_sent_back_and_nothing_runs(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    tool = RecordingTool()
    client = ScriptedClient(_answer("no action"), _answer("ANSWER: fixed"))
    outcome = _rule_loop(tool_context, tmp_path, client, tool).run([], Usage())
    assert outcome.final_message == "fixed"  # the harness's answer, not the reply's text
    assert client.requests[1].history[-1] == Message(role="user", text="one action, please")
    assert tool.calls == [] and outcome.steps == 2


def test_a_submission_the_harness_observes_ends_the_run(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    tool = RecordingTool()
    client = ScriptedClient(_call("rec"), _answer("never asked"))
    outcome = _rule_loop(tool_context, tmp_path, client, tool).run([], Usage())
    assert outcome.final_message == "the diff"
    assert len(client.requests) == 1 and len(tool.calls) == 1


def test_the_request_offers_what_the_harness_says_and_errors_name_only_that(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    client = ScriptedClient(_call("nope"), _answer("ok"))
    _rule_loop(tool_context, tmp_path, client, RecordingTool()).run([], Usage())
    assert [spec.name for spec in client.requests[0].tools] == ["broken"]
    output = client.requests[1].history[-1]
    assert isinstance(output, ToolOutput)
    assert output.output.endswith("Available tools: broken.")
