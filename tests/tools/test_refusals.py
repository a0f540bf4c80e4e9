"""The read-only sandbox's refused writes, counted: the tools' writer (once per refused path
and call) and the heuristic that reads a failed command's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.core.events import CommandExecutionItem
from oiexec.core.policy import SandboxPolicy
from oiexec.tools.fs import write_file
from oiexec.tools.patch_tool import run_patch
from oiexec.tools.refusals import policy_writer, refused_write_command, refused_write_commands
from tests.conftest import FIX_PATCH, MakeToolContext


def test_the_writer_counts_each_refused_path_once_per_call_under_read_only(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    (tmp_path / "calc.py").write_text("x\n")
    ctx = tool_context(tmp_path, mode="read-only")
    writer = policy_writer(ctx)
    for _ in range(2):  # a tool asks before reading and again before writing: one write
        with pytest.raises(ToolInputError, match="read-only sandbox"):
            write_file(tmp_path / "calc.py", "y\n", can_write=writer)
    assert ctx.refused_writes.count == 1
    with pytest.raises(ToolInputError):
        write_file(tmp_path / "other.py", "y\n", can_write=writer)
    assert ctx.refused_writes.count == 2
    # A patch (the tool, or `apply_patch` in a shell command) is its own call.
    assert not run_patch(FIX_PATCH, ctx).ok
    assert ctx.refused_writes.count == 3
    assert (tmp_path / "calc.py").read_text() == "x\n"


def test_workspace_write_refusals_are_not_counted(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    # Outside the roots, or .git: the agent may have done what was asked all the same.
    ctx = tool_context(tmp_path, mode="workspace-write")
    with pytest.raises(ToolInputError):
        write_file(tmp_path / ".git" / "config", "x", can_write=policy_writer(ctx))
    assert ctx.refused_writes.count == 0


def _command(
    output: str, exit_code: int | None = 1, status: str = "failed"
) -> CommandExecutionItem:
    return CommandExecutionItem(
        id="item_0",
        command="bash -c x",
        aggregated_output=output,
        exit_code=exit_code,
        status=status,
    )


@pytest.mark.parametrize(
    "output",
    [
        "bash: calc.py: Read-only file system",  # bubblewrap (EROFS)
        "touch: cannot touch 'x': Permission denied",  # Landlock (EACCES)
        "PermissionError: [Errno 1] Operation not permitted: 'x'",  # Seatbelt (EPERM)
    ],
)
def test_a_failed_command_saying_so_is_a_refused_write(output: str) -> None:
    assert refused_write_command(_command(output))


def test_other_commands_are_not() -> None:
    assert not refused_write_command(_command("FAILED (failures=1)"))
    # It ran fine, or never finished: not refused, whatever it printed.
    assert not refused_write_command(_command("Permission denied", 0, "completed"))
    assert not refused_write_command(_command("Read-only file system", None, "declined"))
    refused = _command("Read-only file system")
    cwd = Path("/w")
    assert refused_write_commands(SandboxPolicy(mode="read-only", cwd=cwd), [refused] * 2) == 2
    assert refused_write_commands(SandboxPolicy(mode="workspace-write", cwd=cwd), [refused]) == 0
