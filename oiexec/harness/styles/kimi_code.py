"""Kimi Code: Kimi's `<system>` errors with its own result wording."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oiexec.harness.styles.claude import ClaudeStyle
from oiexec.harness.styles.kimi_cli import KimiCliStyle, read_message
from oiexec.tools.layout import cat_n
from oiexec.tools.results import CommandRun, Result
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.tools.fs import Edit, ReadResult, ReplaceResult


class KimiCodeStyle(Style):
    name = "kimi-code"

    def error(self, message: str) -> str:
        return f"<system>ERROR: {message}</system>"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = cut_middle(run.text.rstrip("\n"), max_chars)
        if run.timed_out:
            return Result(f"{text}\n{self.timeout_note(timeout_s)}".strip(), True)
        if run.failed:
            return Result(f"{text}\nCommand failed with exit code: {run.exit_code}".strip(), True)
        return Result(text or "<system>Tool output is empty.</system>")

    # Background tasks are worded as Kimi CLI words them.
    background_started = KimiCliStyle.background_started
    task_report = KimiCliStyle.task_report
    task_stopped = KimiCliStyle.task_stopped

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`Read`: the numbered lines with Kimi's status sentence as a `<system>` footer."""
        message = read_message(result)
        footer = f"<system>{message}</system>"
        output = cat_n(result.lines, result.start_line)
        return f"{output}\n{footer}" if output else footer

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        return (
            f"Edited {result.path}: {result.replacements} replacement(s) made. Read the file "
            "again before further edits only if you need its new content."
        )

    # Writes and todo lists read as in Kimi CLI; the read-before-edit refusal as in Claude Code.
    written = KimiCliStyle.written
    todos_updated = KimiCliStyle.todos_updated
    todos_current = KimiCliStyle.todos_current
    not_read = ClaudeStyle.not_read
    changed_since_read = ClaudeStyle.changed_since_read
