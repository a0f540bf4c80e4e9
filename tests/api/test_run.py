"""Running a turn from Python: the result, the event stream, structured output, limits, and
a library that prints nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from oiexec import Agent, ExitCode, MaxTurnsExceeded
from oiexec.core.events import (
    AgentMessageItem,
    CommandExecutionItem,
    ItemCompleted,
    ThreadStarted,
    TurnCompleted,
)
from tests.api.conftest import MakeAgent, provider_config
from tests.conftest import FIX_PATCH, FIXED_CALC
from tests.support.model_server import ModelServer, apply_patch_call, call, hang, reply, usage


def _fix_script(server: ModelServer) -> None:
    server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "python -m unittest -q"})]),
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add() in calc.py.", usage=usage(input_tokens=120, output_tokens=9)),
    )


def test_run_fixes_the_test_and_returns_the_turn(
    make_agent: MakeAgent,
    model_server: ModelServer,
    repo: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    _fix_script(model_server)
    thread = make_agent(model="scripted-model").start_thread()
    assert thread.id is None

    turn = thread.run("fix the failing test")

    assert turn.ok and turn.exit_code == ExitCode.SUCCESS and turn.reason is None
    assert turn.raise_for_status() is turn
    assert turn.final_response == "Fixed add() in calc.py."
    assert (repo / "calc.py").read_text() == FIXED_CALC
    # The change as a patch, the items as the JSONL stream has them, the usage.
    assert turn.diff is not None and "+    return a + b" in turn.diff
    assert [item.type for item in turn.items] == [
        "command_execution",
        "file_change",
        "agent_message",
    ]
    command = turn.items[0]
    assert isinstance(command, CommandExecutionItem) and command.exit_code == 1
    assert turn.usage.output_tokens >= 9
    assert turn.turns == 3
    assert thread.id is not None and turn.thread_id == thread.id
    assert model_server.bodies[0]["model"] == "scripted-model"
    # No price is known for `scripted-model`: the cost is unknown, and a warning says so.
    assert turn.cost_usd is None and turn.session_cost_usd is None
    assert any("cost unknown" in warning for warning in turn.warnings)
    # The library printed nothing, neither did the run's process.
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_turn_says_what_it_cost_at_the_configured_price(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    model_server.enqueue(
        reply("one", usage=usage(1200, 500, cached_input_tokens=300)),
        reply("two", usage=usage(1200, 500, cached_input_tokens=300)),
    )
    price = {"input_per_mtok": 2, "cached_input_per_mtok": 0.5, "output_per_mtok": 10}
    thread = make_agent(config={"model_pricing": price}).start_thread()

    first = thread.run("go")
    second = thread.run("again")  # the thread's second run resumes its session

    # 900 fresh input tokens at $2, 300 cached at $0.50, 500 output at $10 per million.
    assert first.cost_usd == first.session_cost_usd == 0.00695
    assert second.cost_usd == 0.00695 and second.session_cost_usd == 0.0139
    assert not [w for w in second.warnings if "cost" in w]


def test_run_streamed_yields_the_jsonl_events_typed(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo streamed"})]), reply("done")
    )
    thread = make_agent().start_thread()
    streamed = thread.run_streamed("say done")
    events = list(streamed)

    types = [event.type for event in events]
    assert types[:2] == ["thread.started", "turn.started"]
    assert types[-1] == "turn.completed"
    assert "item.started" in types
    started = events[0]
    assert isinstance(started, ThreadStarted) and started.thread_id == thread.id
    command = next(
        e.item
        for e in events
        if isinstance(e, ItemCompleted) and isinstance(e.item, CommandExecutionItem)
    )
    assert command.aggregated_output.strip() == "streamed"
    assert isinstance(events[-1], TurnCompleted)
    assert streamed.result.final_response == "done"


class Verdict(BaseModel):
    passed: bool
    failing: list[str]


def test_structured_output_is_parsed_into_the_schema_model(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    model_server.enqueue(reply('{"passed": false, "failing": ["test_add"]}'))
    turn = make_agent().start_thread().run("which tests fail?", output_schema=Verdict)

    assert turn.ok, turn.reason
    assert turn.output == Verdict(passed=False, failing=["test_add"])
    # The schema went to the model as structured output.
    text_format = model_server.bodies[0]["text"]["format"]
    assert text_format["type"] == "json_schema"
    assert set(text_format["schema"]["properties"]) == {"passed", "failing"}


def test_a_json_schema_dict_gives_the_decoded_json(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    model_server.enqueue(reply('{"n": 3}'))
    turn = make_agent().start_thread().run("count", output_schema=schema)
    assert turn.output == {"n": 3}
    assert isinstance(turn.items[-1], AgentMessageItem)


def test_max_turns_ends_the_turn_with_the_limit(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    model_server.enqueue(
        *(reply(tool_calls=[call("exec_command", {"cmd": f"echo {n}"})]) for n in range(3))
    )
    turn = make_agent().start_thread().run("loop forever", max_turns=2)

    assert turn.exit_code == ExitCode.MAX_TURNS and not turn.ok
    assert turn.limit == "max_turns"
    assert turn.reason is not None and "turn limit reached" in turn.reason
    assert turn.final_response == ""
    assert len(model_server.model_requests) == 2
    # Or as the exception the CLI maps to exit 4, for callers who prefer raising.
    with pytest.raises(MaxTurnsExceeded, match="turn limit reached") as caught:
        turn.raise_for_status()
    assert caught.value.exit_code == 4


def test_import_oiexec_loads_no_heavy_module() -> None:
    """`import oiexec` (what `interpreter --version` pays for) stays light: the API is loaded
    on first use of one of its names."""
    code = (
        "import sys, oiexec\n"
        "heavy = ('pydantic', 'httpx', 'oiexec.api', 'oiexec.runner', 'oiexec.core', 'mcp')\n"
        # The version module (and the docstring-only package above it) is all of core it needs.
        "light = ('oiexec.core', 'oiexec.core.version')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy) and m not in light))\n"
        "oiexec.Agent\n"
        "print('oiexec.api.agent' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "True"]


SECRET = "sk-live-abcdef0123456789"


def test_the_api_key_is_redacted_everywhere_the_caller_looks(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "env | grep -c SCRIPTED_KEY || true"})]),
        reply(f"I found the key {SECRET} in my memory"),
    )
    agent = make_agent(
        config=provider_config(model_server, env_key="SCRIPTED_KEY"),
        env={**os.environ, "SCRIPTED_KEY": SECRET},
    )
    events = list(streamed := agent.start_thread().run_streamed("x"))
    turn = streamed.result

    assert turn.ok, turn.reason
    assert model_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    command = turn.items[0]
    assert isinstance(command, CommandExecutionItem) and command.aggregated_output.strip() == "0"
    assert turn.final_response == "I found the key [REDACTED] in my memory"
    assert all(SECRET not in event.model_dump_json() for event in events)
    # Nor in the options a caller might log.
    assert SECRET not in repr(agent.options) and SECRET not in repr(
        make_agent(api_key=SECRET).options
    )


def test_input_parts_carry_text_and_local_images(
    make_agent: MakeAgent, model_server: ModelServer, tmp_path: Path
) -> None:
    from tests.cli.test_exec_io import PNG_1PX

    image = tmp_path / "shot.png"
    image.write_bytes(PNG_1PX)
    model_server.enqueue(reply("a red pixel"))
    turn = (
        make_agent()
        .start_thread()
        .run(
            [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "local_image", "path": str(image)},
            ]
        )
    )
    assert turn.final_response == "a red pixel"
    sent = json.dumps(model_server.bodies[0]["input"])
    assert "What is in this picture?" in sent and "data:image/png;base64," in sent


def test_timeout_ends_the_turn_with_exit_5(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    model_server.enqueue(hang(30, then=reply("too late")))
    turn = make_agent().start_thread().run("take your time", timeout=1)

    assert turn.exit_code == ExitCode.TIMEOUT and turn.limit == "timeout"
    assert turn.reason is not None and "time limit reached" in turn.reason


def test_api_key_and_base_url_reach_the_builtin_openai_provider(
    model_server: ModelServer, repo: Path
) -> None:
    """As the Codex SDK's `apiKey` and `baseUrl`: no provider config needed."""
    model_server.enqueue(reply("hello from openai"))
    agent = Agent(api_key=SECRET, base_url=model_server.base_url, cwd=repo, sandbox="read-only")
    turn = agent.start_thread().run("hi")

    assert turn.final_response == "hello from openai"
    assert model_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_a_misspelt_run_or_review_keyword_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """The shared keyword lists (`RunOptions`, `ReviewOptions`) are checked as a signature
    would check them: a typo is a TypeError naming it, not a silently ignored option."""
    agent = Agent(cwd=str(tmp_path))
    with pytest.raises(TypeError, match="max_turn"):
        agent.start_thread().run("fix it", max_turn=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="fail_onn"):
        agent.review(uncommitted=True, fail_onn="P0")  # type: ignore[call-arg]
