"""Manifests, selection, guidance, text-action parsing and completion detectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ConfigError
from oiexec.core.protocols import Observation
from oiexec.core.types import Message, ModelResponse, Reasoning, ToolCall, ToolOutput
from oiexec.harness import actions
from oiexec.harness.data import harness_ids, load_spec, load_tool_schemas
from oiexec.harness.manifest import FormatErrorLimit
from oiexec.harness.select import auto_harness_id, choose_harness_id
from oiexec.tools.framework import IMPLS
from oiexec.tools.schema import ArgumentSchema, SchemaError
from tests.harness.conftest import HarnessFactory, Workspace

ISSUE_IDS = {
    "native",
    "claude-code",
    "claude-code-bare",
    "kimi-code",
    "kimi-cli",
    "qwen-code",
    "opencode",
    "deepseek-tui",
    "zcode",
    "minimal",
    "swe-agent",
    "mini-swe-agent",
    "classic",
}


@pytest.mark.parametrize("harness_id", harness_ids())
def test_every_harness_loads_and_advertises_its_schemas(
    harness_id: str, make_harness: HarnessFactory
) -> None:
    spec = load_spec(harness_id)
    assert spec.wire and (harness_dir_prompt := spec.prompt.system)
    assert harness_dir_prompt.endswith(".md")
    harness = make_harness(harness_id)
    assert "$cwd" not in harness.instructions() and harness.instructions().strip()
    specs = {t.spec.name: t.spec for t in harness.tools()}
    assert list(specs) == [t.name for t in spec.tools]
    schemas = load_tool_schemas(harness_id)
    for entry in spec.tools:
        assert entry.impl in IMPLS
        if schemas[entry.name].get("type") == "custom":  # freeform: a grammar, no arguments
            assert specs[entry.name].format == schemas[entry.name]["format"]
            continue
        assert specs[entry.name].parameters == schemas[entry.name]["parameters"]
        # Every argument rename names a parameter the model can actually send.
        props = schemas[entry.name]["parameters"].get("properties", {})
        assert set(entry.args) <= set(props), (entry.name, set(entry.args) - set(props))


def test_the_issue_harnesses_all_exist() -> None:
    assert set(harness_ids()) >= ISSUE_IDS


def _provider(name: str = "", base_url: str = "http://x", wire: str = "chat") -> ProviderConfig:
    return ProviderConfig(name=name, base_url=base_url, wire_api=wire)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "provider_id", "provider", "expected"),
    [
        ("gpt-5.5", "openai", _provider(wire="responses"), "native"),
        ("anything", "p", _provider(wire="messages"), "claude-code"),
        ("anthropic/claude-sonnet-4.6", "openrouter", _provider(), "claude-code"),
        ("m", "p", _provider(base_url="https://api.anthropic.com/v1"), "claude-code"),
        ("kimi-k2", "p", _provider(), "kimi-code"),
        ("m", "moonshot", _provider(), "kimi-code"),
        ("m", "p", _provider(base_url="https://api.moonshot.cn/v1"), "kimi-code"),
        ("qwen3-coder", "p", _provider(), "qwen-code"),
        ("qwq-32b", "p", _provider(), "qwen-code"),
        ("org/qwq-32b", "p", _provider(), "qwen-code"),
        ("m", "dashscope", _provider(), "qwen-code"),
        ("deepseek-chat", "p", _provider(), "claude-code-bare"),
        ("m", "p", _provider(base_url="https://api.deepseek.com"), "claude-code-bare"),
        # First match wins: a Claude model on a Kimi provider is still Claude.
        ("claude-opus", "moonshot", _provider(), "claude-code"),
        ("llama-3", "ollama", _provider(), "native"),
    ],
)
def test_auto_selection_follows_the_reference_order(
    model: str, provider_id: str, provider: ProviderConfig, expected: str
) -> None:
    assert auto_harness_id(model, provider_id, provider) == expected


def test_explicit_harness_wins_and_wrong_wires_are_config_errors() -> None:
    assert choose_harness_id("opencode", "claude-sonnet", "p", _provider()) == "opencode"
    with pytest.raises(ConfigError) as err:
        choose_harness_id("kimi-code", "gpt-5", "openai", _provider(wire="responses"))
    assert "kimi-code" in err.value.message and "responses" in err.value.message
    with pytest.raises(ConfigError):
        choose_harness_id("zcode", "glm-4.6", "zai", _provider(wire="chat"))
    with pytest.raises(ConfigError) as unknown:
        choose_harness_id("nope", "m", "p", _provider())
    assert "nope" in unknown.value.message
    # Auto-selection never lands on a harness the wire cannot carry.
    assert choose_harness_id(None, "kimi-k2", "p", _provider(wire="responses")) == "native"


def test_guidance_is_prepended_only_when_enabled(make_harness: HarnessFactory) -> None:
    guided = make_harness("kimi-cli").instructions()
    plain = make_harness("kimi-cli", guidance=False).instructions()
    assert guided.startswith("# Reliability guidance")
    assert guided.endswith(plain)
    assert "Reliability guidance" not in plain
    assert (
        make_harness("kimi-code").instructions()
        == make_harness("kimi-code", guidance=False).instructions()
    )


# --- text actions ---------------------------------------------------------------------------


def test_fenced_blocks_count_only_the_tagged_language() -> None:
    text = "x\n```mswea_bash_command\nls -la\n```\n```bash\npwd\n```\n"
    assert actions.fenced_blocks(text, "mswea_bash_command") == ["ls -la\n"]
    assert actions.fenced_blocks("no block", "mswea_bash_command") == []


def test_swe_actions_from_fences_and_xml() -> None:
    tools = {"str_replace_editor": ["command", "path"], "submit": [], "bash": []}
    parsed, problem = actions.swe_action(
        "DISCUSSION\nx\n```\nstr_replace_editor str_replace /a.py --old_str 'x = 1' "
        "--new_str 'x = 2'\n```",
        tools,
    )
    assert problem is None
    assert parsed == [
        actions.Action(
            "str_replace_editor",
            {"command": "str_replace", "path": "/a.py", "old_str": "x = 1", "new_str": "x = 2"},
        )
    ]
    parsed, _ = actions.swe_action("```\nstr_replace_editor view /a --view_range 3 9\n```", tools)
    assert parsed[0].arguments["view_range"] == [3, 9]
    parsed, _ = actions.swe_action("```\nls\n```\nthen\n```\ngrep -rn x .\n```", tools)
    assert parsed == [actions.Action("bash", {"command": "grep -rn x ."})]
    xml = '<invoke name="bash">\n<parameter name="command">echo hi</parameter>\n</invoke>'
    assert actions.swe_action(xml, tools)[0] == [actions.Action("bash", {"command": "echo hi"})]
    assert actions.swe_action("just thinking", tools) == ([], "no command block")


def test_classic_code_blocks_need_a_language() -> None:
    assert actions.code_blocks("```\nraw\n```\n```python\nprint(1)\n```") == [
        ("python", "print(1)\n")
    ]


def _response(*items: object, finish: str | None = None) -> ModelResponse:
    return ModelResponse(items=tuple(items), finish_reason=finish)  # type: ignore[arg-type]


def test_mini_format_errors_then_the_limit(make_harness: HarnessFactory) -> None:
    harness = make_harness("mini-swe-agent")
    thought = Message(role="assistant", text="THOUGHT: hmm")
    step = harness.interpret(_response(thought))
    assert not step.final and not step.calls
    assert "found 0 calls" in step.feedback[0].text  # type: ignore[union-attr]
    cut = harness.interpret(_response(thought, finish="length"))
    assert "cut off" in cut.feedback[0].text  # type: ignore[union-attr]
    two = [ToolCall(call_id=f"c{i}", name="bash", arguments='{"command":"ls"}') for i in (1, 2)]
    assert "found 2 calls" in harness.interpret(_response(*two)).feedback[0].text  # type: ignore[union-attr]
    with pytest.raises(FormatErrorLimit):
        harness.interpret(_response(thought))


def test_mini_completion_needs_the_marker_first_and_exit_zero(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("mini-swe-agent")
    marker = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    def observe(command: str) -> str | None:
        call = ToolCall(call_id="c", name="bash", arguments=json.dumps({"command": command}))
        tool = harness.tools()[0]
        return harness.observe(call, tool.run(call, workspace.ctx)).submission

    assert observe(f"echo {marker}; echo the answer") == "the answer"
    assert observe(f"echo {marker}; exit 3") is None
    assert observe(f"echo before; echo {marker}") is None
    assert observe(f"echo '{marker} extra'") is None


def test_swe_submit_reviews_once_then_submits(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=workspace.root, check=True)
    (workspace.root / "new.py").write_text("x = 1\n")
    harness = make_harness("swe-agent")
    submit = {t.spec.name: t for t in harness.tools()}["submit"]

    def turn() -> Observation:
        step = harness.interpret(_response(Message(role="assistant", text="```\nsubmit\n```")))
        (call,) = step.calls
        return harness.observe(call, submit.run(call, workspace.ctx))

    first = turn()
    assert first.submission is None and "+x = 1" in first.items[0].text  # type: ignore[union-attr]
    second = turn()
    assert second.submission is not None and "+x = 1" in second.submission
    assert "<<SWE_AGENT_SUBMISSION>>" in second.items[0].text  # type: ignore[union-attr]


def test_kimi_code_history_rules(make_harness: HarnessFactory) -> None:
    from oiexec.core.types import ModelRequest

    harness = make_harness("kimi-code")
    history = (
        Message(role="user", text="task"),
        ToolCall(call_id="Bash:1", name="Bash", arguments='{"command": "ls",  "cwd": "/"}'),
        ToolOutput(call_id="Bash:1", output="x"),
        ToolCall(call_id="Read:2", name="Read", arguments="{}"),  # never answered
        Message(role="assistant", text="done"),
    )
    shaped = harness.prepare_request(ModelRequest(model="m", instructions="", history=history))
    kinds = [(type(i).__name__, getattr(i, "call_id", None)) for i in shaped.history]
    assert kinds == [
        ("Message", None),
        ("Message", None),  # the auto-approval reminder
        ("Reasoning", None),
        ("ToolCall", "Bash_1"),
        ("ToolOutput", "Bash_1"),
        ("Reasoning", None),
        ("Message", None),
    ]
    call = shaped.history[3]
    assert isinstance(call, ToolCall) and call.arguments == '{"command":"ls","cwd":"/"}'
    assert all(i.content == "" for i in shaped.history if isinstance(i, Reasoning))


def test_deepseek_placeholder_only_on_tool_call_turns(make_harness: HarnessFactory) -> None:
    from oiexec.core.types import ModelRequest

    harness = make_harness("deepseek-tui")
    history = (
        Message(role="user", text="task"),
        ToolCall(call_id="a", name="list_dir", arguments="{}"),
        ToolOutput(call_id="a", output="x"),
        Reasoning(content="kept"),
        ToolCall(call_id="b", name="list_dir", arguments="{}"),
        ToolOutput(call_id="b", output="x"),
        Message(role="assistant", text="done"),
    )
    shaped = harness.prepare_request(ModelRequest(model="m", instructions="", history=history))
    reasoning = [i.content for i in shaped.history if isinstance(i, Reasoning)]
    assert reasoning == ["(reasoning omitted)", "kept"]
    first = shaped.history[0]
    assert isinstance(first, Message) and first.text.startswith("<turn_meta>")


def test_workspace_path_is_used(workspace: Workspace) -> None:
    assert isinstance(workspace.root, Path) and workspace.root.is_dir()


def _near_misses(schema: dict[str, Any]) -> list[Any]:
    """Arguments one mistake away from valid: each property with a wrong-typed value, a
    missing required field, an unknown field, and values that are not objects at all."""
    props = schema.get("properties", {})
    wrong: dict[str, Any] = {"string": 7, "number": "7", "integer": 1.5, "boolean": "yes"}
    wrong |= {"array": "x", "object": [], "null": 0}
    cases: list[Any] = [{}, [], "text", {"unexpected": True}]
    for name, prop in props.items():
        kind = prop.get("type")
        if isinstance(kind, str):
            cases.append({name: wrong[kind]})
        if "enum" in prop:
            cases.append({name: "not-an-option"})
        if prop.get("type") == "array":
            cases.append({name: [{"x": 1}, 5]})
    return cases


def _schemas() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for harness_id in harness_ids():
        for name, schema in load_tool_schemas(harness_id).items():
            if "parameters" in schema:
                found.append((harness_id, name, schema["parameters"]))
    return found


@pytest.mark.parametrize(("harness_id", "name", "schema"), _schemas())
def test_argument_checks_agree_with_jsonschema(
    harness_id: str, name: str, schema: dict[str, Any]
) -> None:
    """Tool arguments are checked without jsonschema (start-up cost); the verdicts and the
    messages the model reads are jsonschema's."""
    import jsonschema

    ours = ArgumentSchema(schema)
    reference = jsonschema.validators.validator_for(schema)(schema)
    for instance in _near_misses(schema):
        errors = sorted(reference.iter_errors(instance), key=lambda e: [str(p) for p in e.path])
        expected = [
            f"{'.'.join(map(str, e.path))}: {e.message}" if e.path else e.message for e in errors
        ]
        assert ours.problems(instance) == expected, (harness_id, name, instance)


def test_unsupported_schema_keywords_are_refused() -> None:
    with pytest.raises(SchemaError, match="oneOf"):
        ArgumentSchema({"type": "object", "properties": {"x": {"oneOf": []}}})
