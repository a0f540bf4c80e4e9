"""Compaction and budgets in the agent loop at its seams: an in-memory model that answers
summary requests and tool turns, a harness with an initial context, real tool context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from oiexec.agent.compact import estimate_request
from oiexec.agent.loop import AgentLoop, LoopLimits, ModelOptions
from oiexec.core.context import ToolContext
from oiexec.core.errors import ContextWindowExceeded, MaxCostExceeded, MaxTokensExceeded
from oiexec.core.events import ItemCompleted, ModelPrice, ThreadEvent, Usage
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import Observation, RetryCallback, Tool
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

ASK = "SUMMARISE NOW"
HEADING = "[summary heading]"
CONTEXT = "AGENTS.md: run the tests with make"
TASK = "fix every bug"


class BigTool:
    """Returns `size` characters of output, numbered so the tail is recognisable."""

    spec = ToolSpec(name="big", description="prints a lot", parameters={"type": "object"})

    def __init__(self, size: int) -> None:
        self.size = size
        self.calls = 0

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        self.calls += 1
        body = f"output {self.calls} " + "x" * self.size
        return ToolOutput(call_id=call.call_id, output=body)


class CompactingHarness(TinyHarness):
    id = "compacting"

    def __init__(self, tools: Sequence[Tool], context: str = CONTEXT) -> None:
        super().__init__(tools)
        self._context = context

    def instructions(self) -> str:
        return "be brief"

    def initial_context(self, cwd: Path, policy: SandboxPolicy) -> list[HistoryItem]:
        return [Message(role="user", text=self._context)]

    def compaction_prompts(self) -> tuple[str, str] | None:
        return ASK, HEADING


class PlainHarness(CompactingHarness):
    def compaction_prompts(self) -> tuple[str, str] | None:
        return None  # a harness that never compacts


class TextObservationHarness(CompactingHarness):
    """Drives the loop as text-format harnesses do: a tool's output comes back to the model
    as a user message (mini-swe-agent's text mode, SWE-agent)."""

    def observe(self, call: ToolCall, output: ToolOutput) -> Observation:
        return Observation((Message(role="user", text=f"OBSERVATION:\n{output.output}"),))


class Model:
    """Calls `big` for `turns` turns, then answers; summarises when asked. `before` may
    raise for a request (a provider refusing it)."""

    def __init__(
        self,
        turns: int,
        *,
        usage: Usage | None = None,
        before: Callable[[ModelRequest], None] | None = None,
    ) -> None:
        self.turns = turns
        self.usage = usage or Usage(input_tokens=10, output_tokens=5)
        self.before = before
        self.requests: list[ModelRequest] = []
        self.done = 0

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        self.requests.append(request)
        if self.before is not None:
            self.before(request)
        last = request.history[-1]
        if isinstance(last, Message) and last.text == ASK:
            return ModelResponse(
                items=(Message(role="assistant", text=f"summary after {self.done} turns"),),
                usage=self.usage,
            )
        if self.done >= self.turns:
            return ModelResponse(items=(Message(role="assistant", text="done"),), usage=self.usage)
        self.done += 1
        call = ToolCall(call_id=f"c{self.done}", name="big", arguments="{}")
        return ModelResponse(items=(call,), usage=self.usage)

    def close(self) -> None:
        pass


def _run(
    tool_context: MakeToolContext,
    tmp_path: Path,
    model: Model,
    *,
    harness: CompactingHarness | None = None,
    size: int = 4_000,
    **limits: object,
) -> tuple[AgentLoop, list[HistoryItem], list[ThreadEvent], list[dict[str, object]]]:
    events: list[ThreadEvent] = []
    compacted: list[dict[str, object]] = []
    harness = harness or CompactingHarness([BigTool(size)])
    loop = AgentLoop(
        client=model,
        harness=harness,
        ctx=tool_context(tmp_path, events=events),
        emit=events.append,
        record=lambda _item: None,
        options=ModelOptions(model="m"),
        limits=LoopLimits(**limits),  # type: ignore[arg-type]
        on_compacted=compacted.append,
    )
    history: list[HistoryItem] = [
        *harness.initial_context(tmp_path, SandboxPolicy(mode="read-only", cwd=tmp_path)),
        Message(role="user", text=TASK),
    ]
    loop.run(history, Usage())
    return loop, history, events, compacted


def _warnings(events: list[ThreadEvent]) -> list[str]:
    return [
        e.item.message
        for e in events
        if isinstance(e, ItemCompleted) and e.item.type == "error"  # type: ignore[union-attr]
    ]


def test_a_long_run_is_compacted_and_every_request_fits_the_window(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    # Turns of about 1,000 tokens in an 8,000-token window: a turn can take the history
    # from under the trigger to over the window, so even the summary request must drop
    # older turns first.
    model = Model(turns=60)
    _loop, history, events, compacted = _run(tool_context, tmp_path, model, context_window=8_000)
    task_requests = [r for r in model.requests if r.history[-1] != Message(role="user", text=ASK)]
    assert len(task_requests) == 61  # every turn ran, then the answer
    assert max(estimate_request(r) for r in model.requests) < 8_000
    assert compacted, "the history outgrew the window, so it must have been compacted"
    assert len(_warnings(events)) == len(compacted)
    assert "context compacted" in _warnings(events)[0]
    # The history that ended the run: context, task, the latest summary, then recent turns.
    texts = [i.text for i in history if isinstance(i, Message)]
    assert texts[:2] == [CONTEXT, TASK]
    summaries = [t for t in texts if t.startswith(HEADING)]
    assert len(summaries) == 1, "an earlier summary is replaced, not kept"
    outputs = [i for i in history if isinstance(i, ToolOutput)]
    assert outputs and outputs[-1].output.startswith("output 60 ")
    # What the rollout records replaces the history exactly.
    assert compacted[-1]["message"] == summaries[0]


def test_observations_as_user_messages_are_compacted_as_turns_not_kept_as_the_task(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=60)
    harness = TextObservationHarness([BigTool(4_000)])
    _, history, _, compacted = _run(
        tool_context, tmp_path, model, harness=harness, context_window=8_000
    )
    assert model.done == 60 and compacted
    assert max(estimate_request(r) for r in model.requests) < 8_000
    texts = [i.text for i in history if isinstance(i, Message) and i.role == "user"]
    assert texts[:3] == [CONTEXT, TASK, texts[2]] and texts[2].startswith(HEADING)
    # Only the latest turns' observations remain, after the summary.
    assert all(t.startswith("OBSERVATION:") for t in texts[3:])
    assert texts[-1].startswith("OBSERVATION:\noutput 60 ")


def test_the_summary_request_carries_the_whole_history_and_the_harness_request(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=20)
    _run(tool_context, tmp_path, model, context_window=8_000, size=2_000)
    asks = [r for r in model.requests if r.history[-1] == Message(role="user", text=ASK)]
    assert asks
    first = asks[0].history
    assert first[0] == Message(role="user", text=CONTEXT)
    assert first[1] == Message(role="user", text=TASK)
    assert any(isinstance(i, ToolOutput) and i.output.startswith("output 1 ") for i in first)


def test_a_refused_request_is_compacted_and_sent_again_once(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    refused: list[int] = []

    def refuse_once(request: ModelRequest) -> None:
        # The provider's window is smaller than configured: it refuses the 4th turn once.
        turns = sum(isinstance(i, ToolOutput) for i in request.history)
        if turns == 3 and not refused and request.history[-1] != Message(role="user", text=ASK):
            refused.append(turns)
            raise ContextWindowExceeded("prompt is too long: 20000 tokens > 10000 maximum")

    model = Model(turns=5, before=refuse_once)
    _, history, _events, compacted = _run(tool_context, tmp_path, model, context_window=100_000)
    assert refused and len(compacted) == 1
    assert isinstance(history[-1], Message) and history[-1].text == "done"


def test_a_request_still_too_long_after_compaction_fails_clearly(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def always_too_long(request: ModelRequest) -> None:
        if request.history[-1] != Message(role="user", text=ASK) and len(request.history) > 4:
            raise ContextWindowExceeded("context_length_exceeded")

    model = Model(turns=5, before=always_too_long)
    with pytest.raises(ContextWindowExceeded, match="even after compacting") as failure:
        _run(tool_context, tmp_path, model, context_window=100_000)
    assert failure.value.hint and "model_context_window" in failure.value.hint


def test_a_window_too_small_for_what_must_be_kept_fails_clearly(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    with pytest.raises(
        ContextWindowExceeded, match="does not fit in the model's context window of 2,000"
    ):
        _run(
            tool_context,
            tmp_path,
            Model(turns=5),
            harness=CompactingHarness([BigTool(10)], context="rules " * 2_000),  # ~3,000 tokens
            context_window=2_000,
        )


def test_what_must_be_kept_over_the_trigger_does_not_cost_a_summary_every_turn(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=60)
    _, _, _, compacted = _run(
        tool_context,
        tmp_path,
        model,
        harness=CompactingHarness([BigTool(100)], context="rule " * 7_300),  # ~9,100 tokens
        context_window=10_000,
    )
    assert model.done == 60
    assert 1 <= len(compacted) <= 12, "a summary at most every few turns, not every turn"
    assert max(estimate_request(r) for r in model.requests) < 10_000


def test_one_huge_turn_is_cut_to_fit(tmp_path: Path, tool_context: MakeToolContext) -> None:
    # One tool result of about 5,000 tokens in a 4,000-token window: nothing older to
    # summarise, so the latest result itself is cut (head and tail kept).
    model = Model(turns=1)
    _, history, _, compacted = _run(
        tool_context, tmp_path, model, context_window=4_000, size=20_000
    )
    assert compacted
    output = next(i for i in history if isinstance(i, ToolOutput))
    assert output.output.startswith("output 1 ") and "tokens truncated" in output.output
    assert max(estimate_request(r) for r in model.requests[2:]) < 4_000


def test_a_first_request_refused_as_too_long_fails_without_a_summary_request(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def refuse(request: ModelRequest) -> None:
        raise ContextWindowExceeded("prompt is too long: 300000 tokens > 200000 maximum")

    model = Model(turns=1, before=refuse)
    with pytest.raises(ContextWindowExceeded, match="nothing to compact yet") as failure:
        _run(tool_context, tmp_path, model)
    assert "300000 tokens" in failure.value.message
    assert len(model.requests) == 1


def test_a_summary_request_refused_every_time_fails_clearly(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def refuse(request: ModelRequest) -> None:
        asking = request.history[-1] == Message(role="user", text=ASK)
        if asking or len(request.history) > 6:
            raise ContextWindowExceeded("context_length_exceeded")

    model = Model(turns=5, before=refuse)
    with pytest.raises(ContextWindowExceeded, match="so is the request to summarise it"):
        _run(tool_context, tmp_path, model)


def test_without_a_compacting_harness_a_refusal_ends_the_run(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def refuse(request: ModelRequest) -> None:
        raise ContextWindowExceeded("413 request too large")

    with pytest.raises(ContextWindowExceeded, match="413"):
        _run(
            tool_context,
            tmp_path,
            Model(turns=1, before=refuse),
            harness=PlainHarness([BigTool(10)]),
        )


def test_token_budget_is_checked_after_every_response(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=10, usage=Usage(input_tokens=300, output_tokens=50))
    with pytest.raises(MaxTokensExceeded, match=r"used 1,050 tokens.*--max-tokens 1000"):
        _run(tool_context, tmp_path, model, max_tokens=1_000)
    assert len(model.requests) == 3


def test_summary_requests_count_against_the_budget(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=40, usage=Usage(input_tokens=100, output_tokens=0))
    loop_requests: list[int] = []
    with pytest.raises(MaxTokensExceeded):
        _run(tool_context, tmp_path, model, context_window=8_000, max_tokens=1_500)
    loop_requests.append(len(model.requests))
    asks = [r for r in model.requests if r.history[-1] == Message(role="user", text=ASK)]
    assert asks, "a compaction happened inside the budget"
    assert loop_requests == [16]  # 1,500 tokens at 100 a request, summaries included


def test_cost_budget_uses_the_price(tmp_path: Path, tool_context: MakeToolContext) -> None:
    price = ModelPrice(input_per_mtok=10.0, output_per_mtok=30.0)
    model = Model(turns=10, usage=Usage(input_tokens=1_000, output_tokens=100))  # $0.013 each
    with pytest.raises(MaxCostExceeded, match=r"cost \$0\.0390.*--max-cost 0\.03"):
        _run(tool_context, tmp_path, model, max_cost=0.03, price=price)
    assert len(model.requests) == 3


def test_usage_is_kept_when_a_budget_ends_the_run(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    model = Model(turns=10, usage=Usage(input_tokens=300, output_tokens=50))
    events: list[ThreadEvent] = []
    loop = AgentLoop(
        client=model,
        harness=CompactingHarness([BigTool(10)]),
        ctx=tool_context(tmp_path, events=events),
        emit=events.append,
        record=lambda _item: None,
        options=ModelOptions(model="m"),
        limits=LoopLimits(max_tokens=1_000),
    )
    with pytest.raises(MaxTokensExceeded):
        loop.run([Message(role="user", text=TASK)], Usage(input_tokens=5_000))
    # The thread's usage includes the earlier runs; the budget counted only this one.
    assert loop.usage.input_tokens == 5_000 + 900


def test_an_item_is_measured_once_for_as_long_as_it_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from oiexec.agent import compact

    dumped: list[str] = []
    real = ToolOutput.model_dump_json

    def counting(self: ToolOutput, **kwargs: Any) -> str:
        dumped.append(self.call_id)
        return real(self, **kwargs)

    monkeypatch.setattr(ToolOutput, "model_dump_json", counting)
    first = ToolOutput(call_id="a", output="x" * 400)
    size = compact._item_tokens(first)
    assert compact._item_tokens(first) == size
    assert dumped == ["a"]
    # Equal content in another item is that item's own measurement, and the same size.
    twin = ToolOutput(call_id="a", output="x" * 400)
    assert compact._item_tokens(twin) == size
    assert dumped == ["a", "a"]
    # An item gone takes its entry with it: the memo holds only live items.
    keys = {id(first), id(twin)}
    del first, twin
    gc.collect()
    assert all(ref() is not None for ref, _ in compact._SIZES.values())
    assert not keys & compact._SIZES.keys()
