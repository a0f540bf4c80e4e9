"""Claude Code (Anthropic): `<tool_use_error>` failures, `cat -n` reads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.tools.layout import cat_n, rg_lines
from oiexec.tools.results import CommandRun, Result, TaskReport, TaskStarted
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.tools.fs import Edit, GlobResult, GrepResult, ReadResult, ReplaceResult, WriteResult

NO_FILES = "No files found"


class ClaudeStyle(Style):
    name = "claude"

    def error(self, message: str) -> str:
        return f"<tool_use_error>{message}</tool_use_error>"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = cut_middle(run.text.rstrip("\n"), max_chars)
        if run.timed_out:
            text = f"{text}\n{self.timeout_note(timeout_s)}".strip()
        if run.failed:
            return Result(f"{text}\nExit code {run.exit_code}".strip(), True)
        return Result(text or "(Bash completed with no output)")

    def background_started(self, task: TaskStarted) -> str:
        return (
            f"Command running in background with ID: {task.task_id}. Output is being written "
            f"to: {task.output_path}"
        )

    def task_report(self, report: TaskReport) -> str:
        lines = [
            f"<retrieval_status>{'success' if report.done else 'timeout'}</retrieval_status>",
            f"<task_id>{report.task_id}</task_id>",
            "<task_type>local_bash</task_type>",
            f"<status>{report.status}</status>",
        ]
        if report.exit_code is not None:
            lines.append(f"<exit_code>{report.exit_code}</exit_code>")
        lines.append(f"<output>\n{report.output.rstrip()}\n</output>")
        return "\n".join(lines)

    def task_stopped(self, task_id: str, command: str) -> str:
        return f"Successfully stopped task: {task_id} ({command})"

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`Read`: `cat -n` with a tab, or a reminder for an empty or too-short file."""
        if result.past_end:
            return (
                "<system-reminder>Warning: the file exists but is shorter than the provided "
                f"offset ({result.start_line}). The file has {result.total_lines} lines."
                "</system-reminder>"
            )
        if result.is_empty_file:
            return (
                "<system-reminder>Warning: the file exists but its contents are empty."
                "</system-reminder>"
            )
        return cat_n(result.lines, result.start_line)

    def read_unchanged(self, path: Path) -> str:
        return (
            f"File unchanged since last read: {path}. The earlier Read result in this "
            "conversation is still current; refer to it instead of reading again."
        )

    def not_read(self, path: Path) -> str:
        return "File has not been read yet. Read it first before writing to it."

    def changed_since_read(self, path: Path) -> str:
        return (
            "File has been modified since read, either by the user or by a linter. "
            "Read it again before attempting to write it."
        )

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        if result.created:
            return f"File created successfully at: {result.path}"
        return f"The file {result.path} has been updated successfully."

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        edit = edits[0]
        if edit.replace_all:
            return (
                f"The file {result.path} has been updated. All occurrences of '{edit.old}' were "
                f"successfully replaced with '{edit.new}'."
            )
        return f"The file {result.path} has been updated successfully."

    def globbed(self, result: GlobResult, *, pattern: str, root: Path) -> str:
        if not result.paths:
            return NO_FILES
        text = "\n".join(str(p) for p in result.paths)
        if result.truncated:
            text += "\n(Results are truncated. Consider using a more specific path or pattern.)"
        return text

    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        """`Grep` in each output mode."""
        mode = result.query.output_mode
        if mode == "files_with_matches":
            if not result.files:
                return NO_FILES
            noun = "file" if result.total == 1 else "files"
            return f"Found {result.total} {noun}\n" + "\n".join(str(p) for p in result.files)
        if mode == "count":
            if not result.counts:
                return "No matches found"
            total = sum(c.count for c in result.counts)
            body = "\n".join(f"{c.path}:{c.count}" for c in result.counts)
            files = len(result.counts)
            return (
                f"{body}\n\nFound {total} total {'occurrence' if total == 1 else 'occurrences'} "
                f"across {files} {'file' if files == 1 else 'files'}."
            )
        if not result.lines:
            return "No matches found"
        return rg_lines(result, line_numbers=line_numbers)
