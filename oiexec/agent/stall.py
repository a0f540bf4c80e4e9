"""The stall watchdog (`--stall-turns N`, `stall_turns = N`): ends a run that goes in circles,
before `--max-turns` (or the bill) would.

It is fed by seams the loop already has and decides at the start of each model turn, before
the request is sent, about the turn before it:

- `record` sees every history item the loop appends: the model's tool calls and what came
  back (tool results, a harness's observations and corrections);
- `commands` gives the run's completed `command_execution` items so far (the runner's
  collector of item events);
- `workspace` fingerprints the workspace (a git tree of tracked and untracked files), or
  gives None when it cannot.

A run is stalled when either holds:

1. the same command (its text, as `command_execution` shows it) has failed (non-zero exit)
   N times (twice at least) with the workspace the same after each failure: a changed
   workspace starts the count again, since re-running a failing test after an edit is how
   work gets done;
2. N turns in a row made no progress: the workspace ended the turn in a state it was already
   in during this run, and every result the turn got (each tool call's name, arguments and
   output, or the text of an observation) was one already seen in this run. Runs of digits
   and hex-looking words in outputs are ignored in that comparison, since timings, ids and
   chunk numbers change on every call without saying anything new.

A workspace that cannot be fingerprinted counts as changed: the watchdog never stops a run
it cannot judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from oiexec.core.errors import Stalled
from oiexec.core.events import CommandExecutionItem
from oiexec.core.types import HistoryItem, Message, ToolCall, ToolOutput

__all__ = ["StallWatchdog"]

#: What counts as a number in an output (timings, ids, chunk numbers): a word of digits and
#: hex letters with at least one digit.
_VOLATILE = re.compile(r"\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b")
#: How much of a command or call the stall message shows.
_SHOWN = 120


@dataclass
class StallWatchdog:
    #: N: failures of one command, or turns in a row without progress, that end the run.
    limit: int
    commands: Callable[[], Sequence[CommandExecutionItem]]
    workspace: Callable[[], str | None]
    _states: set[str] = field(default_factory=set, init=False)
    _seen: set[tuple[str, ...]] = field(default_factory=set, init=False)
    _calls: dict[str, ToolCall] = field(default_factory=dict, init=False)
    #: The results the current turn got, as keys, and how to name each in a message.
    _turn: list[tuple[tuple[str, ...], str]] = field(default_factory=list, init=False)
    _idle_turns: int = field(default=0, init=False)
    _commands_seen: int = field(default=0, init=False)
    #: Per failing command: (failures in a row with the workspace unchanged, its state then).
    _failures: dict[str, tuple[int, str | None]] = field(default_factory=dict, init=False)
    _started: bool = field(default=False, init=False)

    def record(self, item: HistoryItem) -> None:
        """One history item the loop appended (the model's or what came back to it)."""
        if isinstance(item, ToolCall):
            self._calls[item.call_id] = item
        elif isinstance(item, ToolOutput):
            call = self._calls.get(item.call_id)
            name = call.name if call is not None else "?"
            arguments = call.arguments if call is not None else ""
            key = ("tool", name, arguments, _settled(item.output), str(item.is_error))
            self._turn.append((key, f"{name} {arguments}".strip()))
        elif isinstance(item, Message) and item.role != "assistant":
            # A text harness's observation, a format correction, a rejected final answer.
            self._turn.append((("message", item.role, _settled(item.text)), "the same reply"))

    def step(self, number: int) -> None:
        """Model turn `number` is about to start: judges the turn before it (raises
        `Stalled`)."""
        state = self.workspace()
        if not self._started:
            self._started = True
            if state is not None:
                self._states.add(state)
            self._turn.clear()
            return
        self._check_commands(state)
        self._check_progress(state)

    def _check_commands(self, state: str | None) -> None:
        commands = self.commands()
        new, self._commands_seen = commands[self._commands_seen :], len(commands)
        for item in new:
            if item.exit_code in (None, 0):
                continue
            count, before = self._failures.get(item.command, (0, None))
            same = state is not None and before == state
            count = count + 1 if same else 1
            self._failures[item.command] = (count, state)
            # A command that failed once has not been repeated yet, whatever the limit.
            if count >= max(self.limit, 2):
                raise Stalled(
                    f"stalled: the same command failed {count} times with no change to the "
                    f"workspace in between: `{_short(item.command)}` (exit {item.exit_code}); "
                    f"--stall-turns {self.limit}"
                )

    def _check_progress(self, state: str | None) -> None:
        turn, self._turn = self._turn, []
        changed = state is None or state not in self._states
        if state is not None:
            self._states.add(state)
        fresh = [key for key, _ in turn if key not in self._seen]
        self._seen.update(key for key, _ in turn)
        if changed or fresh:
            self._idle_turns = 0
            return
        self._idle_turns += 1
        if self._idle_turns < self.limit:
            return
        shown = "; ".join(dict.fromkeys(f"`{_short(name)}`" for _, name in turn[-2:]))
        repeated = f", repeating {shown}" if shown else ", with no tool call"
        raise Stalled(
            f"stalled: {self._idle_turns} model turns in a row changed nothing in the "
            f"workspace and got no new information{repeated}; --stall-turns {self.limit}"
        )


def _settled(text: str) -> str:
    return _VOLATILE.sub("#", text)


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "…"
