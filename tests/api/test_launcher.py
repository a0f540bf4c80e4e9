"""The API's runs are forks of the caller's zygote: when it dies under a turn (killed, OOM),
the turn ends with an error that says so, its commands are gone, and the next turn starts a
new zygote, synchronous and asyncio alike."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid

import pytest

from oiexec.core.errors import OiexecError
from oiexec.core.events import ItemStarted, ThreadEvent
from oiexec.runner import launch
from tests.api.conftest import MakeAgent, running_commands, wait_for_command
from tests.support.model_server import ModelServer, call, reply


def _kill_zygote_when_the_command_runs(marker: str) -> tuple[list[int], object]:
    killed: list[int] = []

    def on_event(event: ThreadEvent) -> None:
        if isinstance(event, ItemStarted) and not killed:
            assert wait_for_command(marker), "the model's command never started"
            zygote = launch._shared
            assert zygote is not None
            killed.append(zygote.pid)
            os.kill(zygote.pid, signal.SIGKILL)

    return killed, on_event


def _wait_gone(marker: str) -> list[int]:
    for _ in range(300):
        if not running_commands(marker):
            break
        asyncio.run(asyncio.sleep(0.05))
    return running_commands(marker)


def test_a_turn_whose_zygote_dies_raises_and_the_next_turn_runs(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    command = {"cmd": f"sleep {marker}", "yield_time_ms": 30_000}
    model_server.enqueue(reply(tool_calls=[call("exec_command", command)]))
    thread = make_agent().start_thread()
    killed, on_event = _kill_zygote_when_the_command_runs(marker)

    with pytest.raises(OiexecError) as raised:
        thread.run("wait", on_event=on_event)  # type: ignore[arg-type]

    (pid,) = killed
    assert f"launcher (pid {pid}) was killed by SIGKILL while the run was going" in str(
        raised.value.message
    )
    assert _wait_gone(marker) == []
    model_server.enqueue(reply("fine"))
    assert make_agent().start_thread().run("again").final_response == "fine"
    assert launch._shared is not None and launch._shared.pid != pid


def test_an_async_turn_whose_zygote_dies_raises(
    make_agent: MakeAgent, model_server: ModelServer
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**8:08d}"
    command = {"cmd": f"sleep {marker}", "yield_time_ms": 30_000}
    model_server.enqueue(reply(tool_calls=[call("exec_command", command)]))
    thread = make_agent().start_thread()
    killed, on_event = _kill_zygote_when_the_command_runs(marker)

    with pytest.raises(OiexecError, match="was killed by SIGKILL while the run was going"):
        asyncio.run(thread.arun("wait", on_event=on_event))  # type: ignore[arg-type]

    assert killed
    assert _wait_gone(marker) == []
