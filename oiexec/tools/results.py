"""What tools hand to a `Style` and what they get back.

Tools compute product-neutral, typed outcomes (a command run, a background task's state);
the call's `Style` words them into a `Result`, the text the model reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    """A call's result as the model reads it."""

    text: str
    is_error: bool = False
    #: Ends the run with this text as its final message (a submit tool).
    submission: str | None = None


@dataclass(frozen=True)
class CommandRun:
    """One finished (or declined) shell command."""

    #: Merged stdout and stderr, secrets redacted.
    output: str
    exit_code: int | None
    timed_out: bool = False
    #: Why the sandbox declined to run it (then nothing ran).
    refused: str | None = None
    #: What the sandbox or the shell session has to say about the run, one line each.
    notes: tuple[str, ...] = ()
    #: The command as the model gave it, and the directory it ran in relative to the run's
    #: directory ("" for that directory itself; None when unknown).
    command: str = ""
    directory: str | None = None
    #: The process group it ran in, and the signal that ended it (None: it exited).
    pgid: int | None = None
    signal: int | None = None
    #: Where the whole output was saved when it was too long to return in full.
    saved_to: Path | None = None

    @property
    def failed(self) -> bool:
        return self.exit_code != 0 or self.timed_out

    @property
    def text(self) -> str:
        """The output with the notes appended on their own lines."""
        if not self.notes:
            return self.output
        gap = "\n" if self.output and not self.output.endswith("\n") else ""
        return self.output + gap + "\n".join(self.notes)


@dataclass(frozen=True)
class TaskStarted:
    """A command now running in the background."""

    task_id: str
    pid: int
    output_path: Path


@dataclass(frozen=True)
class TaskReport:
    """What a background command has done so far."""

    task_id: str
    #: running, completed, failed or killed.
    status: str
    exit_code: int | None
    #: Its output (the tail, when long).
    output: str
    #: Whether the wait for it ended with the command (False: it timed out).
    done: bool
