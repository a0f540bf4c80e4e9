"""The stall watchdog's rules, in-process (agent/stall.py); the CLI's exit code and messages
are tested in tests/cli/test_exec_stall.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.agent.stall import StallWatchdog
from oiexec.core.errors import Stalled
from oiexec.core.events import CommandExecutionItem
from oiexec.core.types import Message, ToolCall, ToolOutput


@dataclass
class Run:
    """A run as the watchdog sees it: turns of calls with their outputs and commands."""

    limit: int
    state: str | None = "tree-0"
    commands: list[CommandExecutionItem] = field(default_factory=list)
    turn: int = 0

    def __post_init__(self) -> None:
        self.dog = StallWatchdog(self.limit, lambda: self.commands, lambda: self.state)
        self.next_step()

    def next_step(self) -> None:
        self.turn += 1
        self.dog.step(self.turn)

    def call(self, name: str, arguments: str, output: str, *, command: int | None = None) -> None:
        call_id = f"c{len(self.commands)}-{self.turn}-{name}-{arguments}"
        self.dog.record(ToolCall(call_id=call_id, name=name, arguments=arguments))
        self.dog.record(ToolOutput(call_id=call_id, output=output))
        if command is not None:
            self.commands.append(
                CommandExecutionItem(
                    id=f"item_{len(self.commands)}",
                    command=arguments,
                    aggregated_output=output,
                    exit_code=command,
                    status="completed" if command == 0 else "failed",
                )
            )


def test_a_command_failing_again_with_nothing_changed_counts_up_to_the_limit() -> None:
    run = Run(limit=3)
    for _ in range(2):
        run.call("shell", "pytest", "1 failed in 0.0s", command=1)
        run.next_step()
    run.call("shell", "pytest", "1 failed in 0.0s", command=1)
    with pytest.raises(Stalled, match=r"failed 3 times .*`pytest` \(exit 1\)"):
        run.next_step()


def test_a_workspace_change_between_failures_starts_the_count_again() -> None:
    run = Run(limit=2)
    for n in range(5):
        run.state = f"tree-{n}"
        run.call("shell", "pytest", f"{n} failed", command=1)
        run.next_step()


def test_a_command_that_passes_is_not_a_failure() -> None:
    run = Run(limit=2)
    run.call("shell", "true", "", command=0)
    run.next_step()
    run.call("shell", "ls", "a", command=0)  # new information: no stall
    run.next_step()


def test_turns_that_repeat_known_results_stall_after_n_in_a_row() -> None:
    run = Run(limit=2)
    run.call("read", '{"path": "a"}', "text")
    run.next_step()  # new information
    run.call("read", '{"path": "a"}', "text")
    run.next_step()  # first turn without progress
    run.call("read", '{"path": "a"}', "text")
    with pytest.raises(Stalled, match=r"2 model turns in a row .*repeating `read"):
        run.next_step()


def test_timings_and_ids_in_outputs_are_not_new_information() -> None:
    run = Run(limit=1)
    run.call("exec", "x", "Chunk ID: a3f9c1\nWall time: 0.0123 seconds\nok")
    run.next_step()
    run.call("exec", "x", "Chunk ID: 0b7e22\nWall time: 1.5 seconds\nok")
    with pytest.raises(Stalled):
        run.next_step()


def test_a_new_output_or_a_new_workspace_is_progress() -> None:
    run = Run(limit=1)
    run.call("read", "a", "one")
    run.next_step()
    run.call("read", "a", "two")  # the same call, another answer: something changed
    run.next_step()
    run.state = "tree-1"
    run.call("read", "a", "two")  # the same answer, but the workspace is new
    run.next_step()


def test_going_back_to_an_earlier_workspace_is_not_progress() -> None:
    run = Run(limit=2)
    run.call("edit", "flip", "done")
    run.state = "tree-1"
    run.next_step()
    for state in ("tree-0", "tree-1"):  # flip-flopping between two known states
        run.call("edit", "flip", "done")
        run.state = state
        if state == "tree-1":
            with pytest.raises(Stalled):
                run.next_step()
        else:
            run.next_step()


def test_repeated_observation_messages_count_too() -> None:
    run = Run(limit=1)
    run.dog.record(Message(role="user", text="Format error: no action found"))
    run.next_step()
    run.dog.record(Message(role="user", text="Format error: no action found"))
    with pytest.raises(Stalled, match="the same reply"):
        run.next_step()


def test_without_a_workspace_fingerprint_nothing_is_stopped() -> None:
    run = Run(limit=1, state=None)
    for _ in range(4):
        run.call("shell", "pytest", "failed", command=1)
        run.next_step()


@given(
    st.integers(min_value=1, max_value=4),
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 1)), max_size=12),
)
def test_every_turn_in_a_new_workspace_is_never_stopped(
    limit: int, turns: list[tuple[str, int]]
) -> None:
    run = Run(limit=limit)
    for n, (command, code) in enumerate(turns, start=1):
        run.state = f"tree-{n}"
        run.call("shell", command, "same output", command=code)
        run.next_step()
