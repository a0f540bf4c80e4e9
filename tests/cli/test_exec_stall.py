"""The stall watchdog through the real CLI: a run that goes in circles ends with exit 12 and a
`turn.failed` naming what repeated, before the model is asked again; one that makes progress
(or has no limit) is not stopped. The rules themselves are tested in tests/agent/test_stall.py."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply


def _shell(cmd: str) -> object:
    return reply(tool_calls=[call("exec_command", {"cmd": cmd})])


def test_the_same_failing_command_three_times_is_12(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(*[_shell("python -m unittest -q")] * 4, reply("never asked"))
    junit = tmp_path / "junit.xml"
    args = [*exec_args(model_server), "--stall-turns", "3", "--junit", str(junit), "fix it"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 12, result.stderr
    last = result.events[-1]
    assert last["type"] == "turn.failed"
    message = last["error"]["message"]
    assert message.startswith("stalled: the same command failed 3 times"), message
    assert "python -m unittest -q" in message and "--stall-turns 3" in message
    # Stopped before the fourth request: the model call a CI job would have paid for.
    assert len(model_server.model_requests) == 3
    assert 'type="task"' in junit.read_text()
    assert '"failure_reason" value="stalled"' in junit.read_text()


def test_turns_without_progress_end_the_run_from_config(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text("stall_turns = 2\n")
    model_server.enqueue(*[_shell("cat calc.py")] * 4, reply("never asked"))
    result = run_cli([*exec_args(model_server), "look"], cwd=repo)
    assert result.returncode == 12, result.stderr
    message = result.events[-1]["error"]["message"]
    assert message.startswith("stalled: 2 model turns in a row changed nothing"), message
    assert "cat calc.py" in message
    # Turn 1 is new information; turns 2 and 3 repeat it; turn 4 is never requested.
    assert len(model_server.model_requests) == 3


def test_a_run_that_makes_progress_is_not_stopped(model_server: ModelServer, repo: Path) -> None:
    # The same test fails three times, but the workspace changes between the runs; then
    # it passes.
    def edit_and_test(edit: str) -> object:
        test = call("exec_command", {"cmd": "python -m unittest -q"})
        return reply(tool_calls=[call("exec_command", {"cmd": edit}), test])

    model_server.enqueue(
        _shell("python -m unittest -q"),
        edit_and_test("echo '# try 1' >> calc.py"),
        edit_and_test("echo '# try 2' >> calc.py"),
        edit_and_test("sed -i 's/a - b/a + b/' calc.py"),
        reply("fixed"),
    )
    result = run_cli([*exec_args(model_server), "--stall-turns", "2", "fix"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.events[-1]["type"] == "turn.completed"


def test_off_by_default(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(*[_shell("false")] * 5, reply("gave up"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert len(model_server.model_requests) == 6


def test_batch_passes_the_limit_to_every_task() -> None:
    from oiexec.cli.batch_cmd import _exec_argv, run_command

    # The help option names the CLI's root gives every command: click keeps the first help
    # option it builds for a command, and this context has no parent to inherit them from.
    ctx = run_command.make_context(
        "run",
        ["tasks.jsonl", "--out", "d", "--stall-turns", "3"],
        help_option_names=["-h", "--help"],
    )
    argv = _exec_argv(ctx)
    assert argv[argv.index("--stall-turns") + 1] == "3"
