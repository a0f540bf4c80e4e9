"""The agent loop at its seams: a scripted in-memory client, a tiny harness, real tool context."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from oiexec.agent.loop import AgentLoop, LoopLimits, ModelOptions
from oiexec.core.context import ToolContext
from oiexec.core.errors import MaxTurnsExceeded, RunTimedOut
from oiexec.core.events import ThreadEvent, Usage
from oiexec.core.protocols import RetryCallback, Tool
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
