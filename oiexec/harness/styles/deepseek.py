"""DeepSeek TUI: `STDOUT:`/`STDERR:` blocks and short edit notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oiexec.tools.layout import cat_n, rg_lines
from oiexec.tools.results import CommandRun, Result, TaskReport, TaskStarted
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.tools.fs import Edit, GrepResult, ReadResult, ReplaceResult, TodoItem, WriteResult


class DeepseekStyle(Style):
    name = "deepseek"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = cut_middle(run.text.rstrip("\n"), max_chars)
        if run.timed_out:
            return Result(f"{self.timeout_note(timeout_s)}\nSTDOUT:\n{text}\nSTDERR:\n", True)
        if run.failed:
            failed = f"Command failed (exit code: {run.exit_code})"
            return Result(f"{failed}\nSTDOUT:\n{text}\nSTDERR:\n", True)
        return Result(text or "(no output)")

    def background_started(self, task: TaskStarted) -> str:
        return (
            f"Started background task {task.task_id} (pid {task.pid}).\n"
            f"Output file: {task.output_path}\n"
            "Use exec_shell_wait to read its output and exec_shell_cancel to stop it."
        )

    def task_report(self, report: TaskReport) -> str:
        code = "" if report.exit_code is None else f" (exit code: {report.exit_code})"
        state = f"Task {report.task_id}: {report.status}{code}"
        return f"{state}\nSTDOUT:\n{report.output.rstrip()}\nSTDERR:\n"

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        body = cat_n(result.lines, result.start_line)
        if result.end_line < result.total_lines:
            body += (
                f"\n[showing lines {result.start_line}-{result.end_line} of "
                f"{result.total_lines}; continue with start_line={result.end_line + 1}]"
            )
        return body or "(empty file)"

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        return f"Wrote {result.bytes_written} bytes to {result.path}"

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        return f"Edited {result.path} ({result.replacements} replacement(s))."

    # Search results read as in Qwen Code.
    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        """`grep_files`: `path:line:text` lines, or a sentence naming the empty search."""
        if not result.lines:
            query = result.query
            return f'No matches found for pattern "{query.pattern}" in {query.path}.'
        return rg_lines(result)

    def todos_updated(self, items: Sequence[TodoItem]) -> str:
        """`checklist_write`: a short acknowledgement, the list shows in the checklist."""
        return "Plan updated"
