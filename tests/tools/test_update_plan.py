"""`update_plan`: schema, validation messages and the todo_list item lifecycle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.events import ItemCompleted, ItemStarted, ItemUpdated, ThreadEvent, TodoListItem
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.harness.data import load_spec, load_tool_schemas
from oiexec.tools.framework import ManifestTool, Runtime
from oiexec.tools.style import Style
from oiexec.tools.update_plan import parse_plan
from tests.conftest import MakeToolContext

PARAMETERS = load_tool_schemas("native")["update_plan"]["parameters"]


class UpdatePlanTool:
    """The native harness's `update_plan` over its own runtime; `finish` ends the turn."""

    def __init__(self) -> None:
        self.runtime = Runtime(style=Style())
        entry = load_spec("native").tool("update_plan")
        schema = load_tool_schemas("native")["update_plan"]
        self.tool = ManifestTool(entry, schema, self.runtime, Style())

    @property
    def spec(self) -> ToolSpec:
        return self.tool.spec

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        return self.tool.run(call, ctx)

    def finish(self, ctx: ToolContext) -> None:
        self.runtime.finish(ctx)


@pytest.fixture
def events() -> list[ThreadEvent]:
    return []


@pytest.fixture
def ctx(tmp_path: Path, events: list[ThreadEvent], tool_context: MakeToolContext) -> ToolContext:
    return tool_context(tmp_path, mode="read-only", events=events)


def call(arguments: Any, call_id: str = "call_1") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id=call_id, name="update_plan", arguments=text)


def plan(*steps: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {"plan": [{"step": s, "status": st_} for s, st_ in steps], **extra}


def lifecycle(events: list[ThreadEvent]) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    out: list[tuple[str, str, list[tuple[str, bool]]]] = []
    for event in events:
        assert isinstance(event, ItemStarted | ItemUpdated | ItemCompleted)
        assert isinstance(event.item, TodoListItem)
        out.append((event.type, event.item.id, [(e.text, e.completed) for e in event.item.items]))
    return out


def test_spec_matches_codex() -> None:
    spec = UpdatePlanTool().spec
    assert spec.name == "update_plan"
    assert spec.type == "function"
    params = spec.parameters
    assert params is not None
    assert params["required"] == ["plan"]
    assert params["additionalProperties"] is False
    assert params["properties"]["explanation"]["type"] == "string"
    items = params["properties"]["plan"]["items"]
    assert items["required"] == ["step", "status"]
    assert items["additionalProperties"] is False
    assert items["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    jsonschema.Draft202012Validator.check_schema(params)


def test_plan_lifecycle(ctx: ToolContext, events: list[ThreadEvent]) -> None:
    tool = UpdatePlanTool()
    first = tool.run(call(plan(("read", "in_progress"), ("fix", "pending"))), ctx)
    assert first.output == "Plan updated"
    assert not first.is_error
    assert first.call_id == "call_1"
    second = tool.run(
        call(plan(("read", "completed"), ("fix", "in_progress"), explanation="on to the fix")),
        ctx,
    )
    assert second.output == "Plan updated"
    tool.finish(ctx)
    tool.finish(ctx)  # a second finish must not complete the item twice
    assert lifecycle(events) == [
        ("item.started", "item_0", [("read", False), ("fix", False)]),
        ("item.updated", "item_0", [("read", True), ("fix", False)]),
        ("item.completed", "item_0", [("read", True), ("fix", False)]),
    ]


def test_next_turn_starts_a_new_item(ctx: ToolContext, events: list[ThreadEvent]) -> None:
    tool = UpdatePlanTool()
    tool.run(call(plan(("a", "completed"))), ctx)
    tool.finish(ctx)
    tool.run(call(plan(("b", "pending"))), ctx)
    assert lifecycle(events)[-1] == ("item.started", "item_1", [("b", False)])


def test_finish_without_a_plan_emits_nothing(ctx: ToolContext, events: list[ThreadEvent]) -> None:
    UpdatePlanTool().finish(ctx)
    assert events == []


def test_empty_plan_is_accepted(ctx: ToolContext, events: list[ThreadEvent]) -> None:
    assert UpdatePlanTool().run(call({"plan": []}), ctx).output == "Plan updated"
    assert lifecycle(events) == [("item.started", "item_0", [])]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ("{not json", "arguments are not valid JSON"),
        ("", 'must be a JSON object with a "plan" array'),
        ("[]", 'must be a JSON object with a "plan" array'),
        ({}, '"plan" is required'),
        ({"plan": "do it"}, '"plan" is required and must be an array'),
        ({"plan": [], "steps": []}, "unknown argument(s): steps"),
        ({"plan": [], "explanation": 5}, '"explanation" must be a string'),
        ({"plan": ["step one"]}, "plan[0] must be an object"),
        ({"plan": [{"status": "pending"}]}, "plan[0].step is required and must be a string"),
        ({"plan": [{"step": 1, "status": "pending"}]}, "plan[0].step is required"),
        (
            {"plan": [{"step": "a", "status": "pending"}, {"step": "b", "status": "done"}]},
            'plan[1].status must be one of pending, in_progress, completed (got "done")',
        ),
        ({"plan": [{"step": "a"}]}, "plan[0].status must be one of"),
        ({"plan": [{"step": "a", "status": "pending", "note": 1}]}, "unknown field(s): note"),
        (
            plan(("a", "in_progress"), ("b", "pending"), ("c", "in_progress")),
            "at most one step can be in_progress, but 2 are (plan[0], plan[2])",
        ),
    ],
)
def test_bad_arguments_are_explained(
    ctx: ToolContext, events: list[ThreadEvent], arguments: Any, fragment: str
) -> None:
    tool = UpdatePlanTool()
    output = tool.run(call(arguments), ctx)
    assert output.is_error
    assert output.output.startswith("update_plan: ")
    assert fragment in output.output
    assert output.output.endswith("The plan was not updated.")
    assert events == []
    tool.finish(ctx)
    assert events == []


def test_a_rejected_update_keeps_the_previous_plan(
    ctx: ToolContext, events: list[ThreadEvent]
) -> None:
    tool = UpdatePlanTool()
    tool.run(call(plan(("a", "in_progress"))), ctx)
    assert tool.run(call(plan(("a", "in_progress"), ("b", "in_progress"))), ctx).is_error
    tool.finish(ctx)
    assert lifecycle(events)[-1] == ("item.completed", "item_0", [("a", False)])


_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_STATUS = st.sampled_from(["pending", "in_progress", "completed"])
_VALID_STEP = st.fixed_dictionaries({"step": st.text(max_size=8), "status": _STATUS})
# Steps that are one mistake away from valid, so the two validators are compared where it matters.
_STEP = st.one_of(
    _VALID_STEP,
    st.fixed_dictionaries({"step": st.text(max_size=8), "status": st.sampled_from(["done", ""])}),
    st.fixed_dictionaries({"step": st.text(max_size=8), "status": _STATUS, "why": _VALUE}),
    st.fixed_dictionaries({"step": _VALUE, "status": _STATUS}),
    st.fixed_dictionaries({"step": st.text(max_size=8), "status": _VALUE}),
    st.fixed_dictionaries({}, optional={"step": st.text(max_size=8), "status": _STATUS}),
    _VALUE,
)
_ARGS = st.fixed_dictionaries(
    {"plan": st.lists(_VALID_STEP, max_size=4) | st.lists(_STEP, max_size=3) | _VALUE},
    optional={"explanation": st.text(max_size=5) | _VALUE, "extra": _VALUE},
) | st.fixed_dictionaries({}, optional={"explanation": _VALUE})


@settings(max_examples=300, deadline=None)
@given(args=_ARGS)
def test_validation_agrees_with_the_published_schema(args: dict[str, Any]) -> None:
    # A null explanation is tolerated (models send it for "no explanation").
    schema_args = {k: v for k, v in args.items() if not (k == "explanation" and v is None)}
    valid = jsonschema.Draft202012Validator(PARAMETERS).is_valid(schema_args)
    steps = args.get("plan")
    running = (
        sum(1 for s in steps if isinstance(s, dict) and s.get("status") == "in_progress")
        if isinstance(steps, list)
        else 0
    )
    try:
        parse_plan(json.dumps(args))
    except ToolInputError:
        assert not valid or running > 1
    else:
        assert valid and running <= 1
