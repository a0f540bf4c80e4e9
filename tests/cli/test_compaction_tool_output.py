"""No tool hands the model unbounded output: a command printing 300 KB reaches the model
cut, head and tail kept, in every harness (each in its own tool, argument names and action
format, on a wire it speaks), through the real CLI. Products with their own cap keep it; the
Codex tools follow `tool_output_token_limit`; the framework's backstop cuts whatever a tool
leaves uncut."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from oiexec.core.types import ToolCall
from oiexec.harness.data import harness_ids, load_spec
from oiexec.tools.entry import ToolEntry
from oiexec.tools.framework import FRAMING_TOKENS, Invocation, ManifestTool, Runtime, register
from oiexec.tools.results import Result
from oiexec.tools.style import Style
from tests.conftest import CliResult, MakeToolContext, exec_args, run_cli
from tests.support import model_server as ms
from tests.support.model_server import ModelServer, Reply, call, reply, tool_outputs, user_texts

HEAD, TAIL = "HEAD-OF-OUTPUT", "TAIL-OF-OUTPUT"
SIZE = 300_000
CMD = f"python3 -c \"print('{HEAD}'); print('x' * {SIZE}); print('{TAIL}')\""


def _shell(name: str, key: str = "command") -> Callable[[], Reply]:
    return lambda: reply(tool_calls=[call(name, {key: CMD})])


#: The first reply of each harness: its shell tool (or text action) running CMD.
FIRST: dict[str, Callable[[], Reply]] = {
    "native": _shell("exec_command", "cmd"),
    "minimal": _shell("exec_command", "cmd"),
    "claude-code": _shell("Bash"),
    "claude-code-bare": _shell("Bash"),
    "zcode": _shell("Bash"),
    "kimi-code": _shell("Bash"),
    "kimi-cli": _shell("Shell"),
    "qwen-code": _shell("run_shell_command"),
    "opencode": _shell("bash"),
    "deepseek-tui": _shell("exec_shell"),
    "mini-swe-agent": lambda: reply(
        "THOUGHT: run it.", tool_calls=[call("bash", {"command": CMD})]
    ),
    "mini-swe-agent-text": lambda: reply(f"THOUGHT: run it.\n\n```mswea_bash_command\n{CMD}\n```"),
    "swe-agent": lambda: reply(f"DISCUSSION\nRun it.\n\n```\n{CMD}\n```"),
    "classic": lambda: reply(tool_calls=[call("execute", {"language": "shell", "code": CMD})]),
}
#: Claude Code keeps a large output in a file and shows the model its first 2 KB: its own
#: cap, kept.
HEAD_ONLY = {"claude-code"}
#: opencode 1.18 keeps a large output in a file and shows the model its last 2,000 lines.
TAIL_ONLY = {"opencode"}
#: Characters the observation may take: the largest product cap (SWE-agent's 100,000) or the
#: backstop above it, with room for the product's framing.
BOUND = 110_000


def _wire(harness_id: str) -> str:
    served = set(typing.get_args(ms.Wire))
    return next(w for w in load_spec(harness_id).wire if w in served)


def test_every_harness_is_covered() -> None:
    assert set(FIRST) == set(harness_ids())


def _run_first(model_server: ModelServer, repo: Path, harness_id: str, *options: str) -> CliResult:
    """`interpreter exec` in `harness_id`, whose model runs CMD once and then answers."""
    model_server.enqueue(FIRST[harness_id](), reply("done"))
    return run_cli(
        [
            *exec_args(model_server, wire=_wire(harness_id)),
            "-c",
            f'harness="{harness_id}"',
            *options,
            "run it",
        ],
        cwd=repo,
    )


def _observation(body: dict[str, object]) -> str:
    """The command's result as the model got it: a tool result, else the user message."""
    for text in [*tool_outputs(body).values(), *user_texts(body)]:
        if HEAD in text or TAIL in text:
            return text
    raise AssertionError("the command's output is not in the next request")


@pytest.mark.parametrize("harness_id", sorted(FIRST))
def test_a_huge_output_reaches_the_model_cut(
    model_server: ModelServer, repo: Path, harness_id: str
) -> None:
    result = _run_first(model_server, repo, harness_id, "--max-turns", "2")
    assert result.returncode in (0, 4), result.stderr[-2000:]
    assert len(model_server.bodies) == 2, result.stderr[-2000:]
    seen = _observation(model_server.bodies[1])
    if harness_id in TAIL_ONLY:
        assert TAIL in seen and "Full output saved to" in seen
    else:
        assert HEAD in seen
    if harness_id in HEAD_ONLY | TAIL_ONLY:
        assert "Full output saved to" in seen
    else:
        assert TAIL in seen, "head and tail are kept"
    assert len(seen) < BOUND, f"{len(seen)} characters reached the model"
    assert len(json.dumps(model_server.bodies[1])) < SIZE // 2


@pytest.mark.parametrize("harness_id", ["native", "minimal"])
def test_codex_tools_follow_tool_output_token_limit(
    model_server: ModelServer, repo: Path, harness_id: str
) -> None:
    result = _run_first(model_server, repo, harness_id, "-c", "tool_output_token_limit=500")
    assert result.returncode == 0, result.stderr[-2000:]
    seen = _observation(model_server.bodies[1])
    # Codex's layout puts a few header lines above the output; the output itself keeps
    # head and tail within the 500-token budget.
    output = seen.split("Output:\n", 1)[1]
    assert HEAD in output and TAIL in output
    assert len(output.encode()) <= 500 * 4 + 200


@register("test_flood")
def _flood(inv: Invocation) -> Result:
    """A tool that cuts nothing: half a megabyte of output."""
    return Result(f"{HEAD}\n" + "x" * 500_000 + f"\n{TAIL}")


def _flood_tool(**options: object) -> ManifestTool:
    entry = ToolEntry(name="flood", impl="test_flood", options=options)
    schema = {"description": "floods", "parameters": {"type": "object"}}
    return ManifestTool(entry, schema, Runtime(style=Style(), output_token_limit=10_000), Style())


@pytest.mark.parametrize(
    ("options", "ceiling"),
    [
        ({}, 10_000 + FRAMING_TOKENS),  # tool_output_token_limit
        ({"max_output_chars": 30_000}, 10_000 + FRAMING_TOKENS),  # the larger of the two
        ({"max_output_chars": 100_000}, 25_000 + FRAMING_TOKENS),  # SWE-agent's allowance
    ],
)
def test_the_backstop_cuts_what_a_tool_leaves_uncut(
    tool_context: MakeToolContext, tmp_path: Path, options: dict[str, object], ceiling: int
) -> None:
    tool = _flood_tool(**options)
    call_ = ToolCall(call_id="c1", name="flood", arguments="{}")
    output = tool.run(call_, tool_context(tmp_path)).output
    assert output.startswith(HEAD) and output.endswith(TAIL), "head and tail are kept"
    assert "tokens truncated" in output
    assert ceiling * 4 - 8 <= len(output.encode()) <= ceiling * 4 + 40


def test_a_result_under_the_ceiling_is_untouched(
    tool_context: MakeToolContext, tmp_path: Path
) -> None:
    tool = _flood_tool(max_output_chars=600_000)
    output = tool.run(ToolCall(call_id="c1", name="flood", arguments="{}"), tool_context(tmp_path))
    assert output.output == f"{HEAD}\n" + "x" * 500_000 + f"\n{TAIL}"
