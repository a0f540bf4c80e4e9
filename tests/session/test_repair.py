"""Closing the calls a killed run left open, and reading old rollouts' settings."""

from __future__ import annotations

from oiexec.core.types import HistoryItem, Message, ToolCall, ToolOutput
from oiexec.session.repair import KILLED_OUTPUT, close_orphan_calls
from oiexec.session.settings import outcome_of, settings_of


def _call(call_id: str) -> ToolCall:
    return ToolCall(call_id=call_id, name="exec_command", arguments="{}")


def test_open_calls_are_closed_right_after_their_group() -> None:
    history: list[HistoryItem] = [
        Message(role="user", text="task"),
        _call("a"),
        _call("b"),
        ToolOutput(call_id="a", output="done"),
        Message(role="user", text="next task"),
    ]
    repaired, closed = close_orphan_calls(history)
    assert closed == 1
    # The chat wire needs every tool message right after the assistant's calls.
    assert [getattr(i, "call_id", None) for i in repaired] == [None, "a", "b", "a", "b", None]
    synthetic = repaired[4]
    assert isinstance(synthetic, ToolOutput)
    assert synthetic.output == KILLED_OUTPUT and synthetic.is_error


def test_complete_history_is_untouched() -> None:
    history: list[HistoryItem] = [_call("a"), ToolOutput(call_id="a", output="ok")]
    assert close_orphan_calls(history) == (history, 0)


def test_a_rollout_from_before_settings_were_recorded_restores_what_it_has() -> None:
    old = {
        "cwd": "/w",
        "sandbox_policy": {"type": "workspace-write", "network_access": False},
        "model": "m",
        "effort": None,
    }
    settings = settings_of(old)
    assert (settings.cwd, settings.sandbox_mode, settings.model) == ("/w", "workspace-write", "m")
    # Not recorded then: not restored (the effective network flag is not the configured one).
    assert settings.writable_roots is None and settings.network_access is None
    assert settings.harness is None and settings.output_schema is None
    assert outcome_of({"last_agent_message": "x"}).status == "completed"
    assert outcome_of({"status": "failed", "exit_code": 4}).exit_code == 4
