"""A command output too long to return is kept whole in a file the result names (Claude
Code, Qwen Code, opencode), readable for the rest of the run and removed at its end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.conftest import HarnessFactory, Workspace, run_tool

WHOLE = "".join(f"{n}\n" for n in range(1, 40001))


@pytest.mark.parametrize(
    ("harness_id", "tool"),
    [("claude-code", "Bash"), ("qwen-code", "run_shell_command"), ("opencode", "bash")],
)
def test_a_long_output_is_saved_whole_until_the_run_ends(
    make_harness: HarnessFactory, workspace: Workspace, harness_id: str, tool: str
) -> None:
    harness = make_harness(harness_id)
    out = run_tool(harness, workspace, tool, {"command": "seq 1 40000"})
    found = re.search(r"[Ss]aved to: (\S+)", out.output)
    assert found, out.output[:300]
    saved = Path(found.group(1))
    assert saved.read_text() == WHOLE
    assert len(out.output) < 30_000
    harness.close()
    assert not saved.exists()


def test_a_short_output_is_not_saved(make_harness: HarnessFactory, workspace: Workspace) -> None:
    out = run_tool(make_harness("claude-code"), workspace, "Bash", {"command": "seq 1 10"})
    assert out.output == "\n".join(str(n) for n in range(1, 11))
