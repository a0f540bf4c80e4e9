"""asyncio: cancelling a turn kills what it started, and turns run side by side without
sharing state."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from oiexec import ExitCode, Turn
from oiexec.core.events import CommandExecutionItem, ItemStarted
from tests.api.conftest import MakeAgent, running_commands, wait_for_command
from tests.conftest import git
from tests.support.model_server import ModelServer, call, reply


def test_cancelling_the_task_kills_the_runs_processes(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    # A duration no other process has: bash execs `sleep` itself, so the marker must be in
    # its own arguments.
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"sleep {marker}"})]),
        reply("never reached"),
    )
    thread = make_agent().start_thread()

    async def main() -> list[int]:
        started = asyncio.Event()
        seen: list[int] = []

        async def consume() -> None:
            async for event in thread.arun_streamed("wait a long time"):
                if isinstance(event, ItemStarted) and isinstance(event.item, CommandExecutionItem):
                    started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), timeout=30)
        # The command is running until the task is cancelled.
        seen = await asyncio.to_thread(wait_for_command, marker)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return seen

    before = asyncio.run(main())
    assert before, "the model's command never started"
    assert running_commands(marker) == []
    # The session recorded the interrupted turn: the thread can be resumed.
    assert thread.id is not None


def test_two_threads_run_concurrently_without_sharing_state(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "README").write_text("other\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "initial")
    # Two conversations on one server, told apart by a marker in their prompts, since their
    # requests interleave.
    model_server.route(
        "TASK-ONE",
        reply(tool_calls=[call("exec_command", {"cmd": "pwd; touch one.txt; sleep 1"})]),
        reply("one done"),
    )
    model_server.route(
        "TASK-TWO",
        reply(tool_calls=[call("exec_command", {"cmd": "pwd; touch two.txt; sleep 1"})]),
        reply("two done"),
    )
    writer = make_agent(model="model-one", cwd=repo, sandbox="workspace-write")
    reader = make_agent(model="model-two", cwd=other, sandbox="read-only")

    async def main() -> tuple[Turn, Turn]:
        one, two = await asyncio.gather(
            writer.start_thread().arun("TASK-ONE"), reader.start_thread().arun("TASK-TWO")
        )
        return one, two

    one, two = asyncio.run(main())
    assert one.exit_code == ExitCode.SUCCESS and two.exit_code == ExitCode.SUCCESS
    # Each ran in its own directory, with its own model and its own sandbox.
    assert (repo / "one.txt").exists() and not (other / "one.txt").exists()
    assert not (other / "two.txt").exists(), "the read-only thread could write"
    commands = {
        turn.final_response: next(i for i in turn.items if isinstance(i, CommandExecutionItem))
        for turn in (one, two)
    }
    assert commands["one done"].aggregated_output.splitlines()[0] == str(repo)
    assert commands["two done"].aggregated_output.splitlines()[0] == str(other)
    assert "Read-only file system" in commands["two done"].aggregated_output
    models = {body["model"] for body in model_server.bodies}
    assert models == {"model-one", "model-two"}
    assert one.diff is not None and "one.txt" in one.diff
    assert two.diff == ""
    subprocess.run(["git", "status"], cwd=other, check=True, capture_output=True)


def test_thread_cancel_from_another_thread_ends_the_turn(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"sleep {marker}"})]),
        reply("never reached"),
    )
    thread = make_agent().start_thread()
    turns: list[Turn] = []
    started = threading.Event()

    def on_event(event: object) -> None:
        if isinstance(event, ItemStarted):
            started.set()

    worker = threading.Thread(target=lambda: turns.append(thread.run("wait", on_event=on_event)))
    worker.start()
    assert started.wait(30), "the model's command never started"
    assert wait_for_command(marker), "the model's command never started"
    thread.cancel()
    worker.join(30)

    [turn] = turns
    assert turn.exit_code == ExitCode.TERMINATED
    assert turn.reason == "interrupted by SIGTERM"
    assert running_commands(marker) == []


def test_leaving_the_event_loop_early_stops_the_run(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": f"sleep {marker}"})]))
    thread = make_agent().start_thread()
    streamed = thread.run_streamed("wait")
    for event in streamed:
        if isinstance(event, ItemStarted):
            assert wait_for_command(marker), "the model's command never started"
            break
    streamed.close()  # the caller lost interest: the run is stopped with its commands

    assert running_commands(marker) == []
    # The thread is free for its next turn, which continues the session.
    model_server.enqueue(reply("resumed"))
    assert thread.run("go on").final_response == "resumed"


def test_a_callback_that_raises_stops_the_run(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": f"sleep {marker}"})]))
    seen: list[int] = []

    def on_event(event: object) -> None:
        if isinstance(event, ItemStarted):
            seen[:] = wait_for_command(marker)
            raise RuntimeError("the caller's callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        make_agent().start_thread().run("wait", on_event=on_event)
    assert seen, "the model's command never started"
    # Stopped before the exception reached the caller, not when it is garbage-collected.
    assert running_commands(marker) == []


_CALLER = """
import sys
from oiexec import Agent
from oiexec.core.events import ItemStarted

agent = Agent(sandbox="danger-full-access", config={
    "model_provider": "scripted",
    "model_providers": {"scripted": {"name": "S", "base_url": sys.argv[1]}},
})
for event in agent.start_thread().run_streamed("wait"):
    if isinstance(event, ItemStarted):
        print("started", flush=True)
"""


def test_a_caller_killed_outright_does_not_leave_its_run_going(
    model_server: ModelServer, repo: Path
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    # The tool waits for the command as long as it may (30 s): the run cannot end by itself
    # within the 20 s this test allows.
    command = {"cmd": f"sleep {marker}", "yield_time_ms": 30_000}
    model_server.enqueue(reply(tool_calls=[call("exec_command", command)]))
    with subprocess.Popen(
        [sys.executable, "-c", _CALLER, model_server.base_url],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    ) as caller:
        try:
            assert caller.stdout is not None and caller.stdout.readline() == "started\n"
            assert wait_for_command(marker), "the model's command never started"
        finally:
            caller.kill()  # SIGKILL: no clean-up of its own
    # The zygote exits with its caller, and the run with the zygote.
    for _ in range(200):
        if not running_commands(marker):
            break
        time.sleep(0.1)
    assert running_commands(marker) == []
