"""Claude Code (Anthropic) 2.1.197: `<tool_use_error>` failures, `N<TAB>line` reads, a
failed command's `Exit code N` first line, long output persisted to a file with a preview."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.tools.layout import rg_lines
from oiexec.tools.results import CommandRun, Result, TaskReport, TaskStarted
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import Edit, GlobResult, GrepResult, ReadResult, ReplaceResult, WriteResult

NO_FILES = "No files found"
#: Edits and writes tell the model its view of the file is current (no Read needed).
STATE_CURRENT = " (file state is current in your context \u2014 no need to Read it back)"
#: How much of a persisted output the result previews.
PREVIEW_CHARS = 2000


def persisted(text: str, saved_to: Path) -> str:
    """An output too long to return: its size, where it is, and its first lines."""
    size_kb = len(text.encode("utf-8")) / 1024
    preview = text[:PREVIEW_CHARS]
    if len(text) > PREVIEW_CHARS and "\n" in preview:
        preview = preview[: preview.rindex("\n")]
    return (
        f"<persisted-output>\nOutput too large ({size_kb:.1f}KB). Full output saved to: "
        f"{saved_to}\n\nPreview (first 2KB):\n{preview}\n...\n</persisted-output>"
    )


class ClaudeStyle(Style):
    name = "claude"

    def error(self, message: str) -> str:
        return f"<tool_use_error>{message}</tool_use_error>"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        if run.saved_to is not None:
            text = persisted(run.text, run.saved_to)
        else:
            text = cut_middle(run.text.rstrip("\n"), max_chars)
        if run.timed_out:
            text = f"{text}\n{self.timeout_note(timeout_s)}".strip()
        if run.failed:
            return Result(f"Exit code {run.exit_code}\n{text}".strip(), True)
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
        """`Read`: `N<TAB>line`, unpadded, counting the empty line after a final line break
        as a line (an empty file is one empty line, and reads as past its end)."""
        total = result.total_lines + (1 if result.final_newline else 0)
        if result.past_end or result.is_empty_file:
            return (
                "<system-reminder>Warning: the file exists but is shorter than the provided "
                f"offset ({result.start_line}). The file has {max(total, 1)} lines."
                "</system-reminder>"
            )
        lines = list(result.lines)
        if result.final_newline and result.end_line == result.total_lines:
            lines.append("")
        return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, result.start_line))

    def read_failed(self, error: ToolInputError, *, cwd: Path) -> Result:
        if error.kind == "missing":
            return Result(
                f"File does not exist. Note: your current working directory is {cwd}.", True
            )
        if error.kind == "binary":
            kind = (
                f"binary {error.path.suffix} file"
                if error.path and error.path.suffix
                else ("binary file")
            )
            return Result(
                self.error(
                    f"The file looks like a {kind}, and this tool reads text only. Inspect it "
                    "with a tool suited to binary data instead."
                ),
                True,
            )
        return super().read_failed(error, cwd=cwd)

    def read_unchanged(self, path: Path, *, cwd: Path) -> str:
        return (
            "Wasted call \u2014 file unchanged since your last Read. Refer to that earlier "
            "tool_result instead."
        )

    def not_read(self, path: Path, *, overwrite: bool = False) -> str:
        return "File has not been read yet. Read it first before writing to it."

    def changed_since_read(self, path: Path) -> str:
        return (
            "The file changed on disk after it was read (by the user or a tool such as a "
            "linter). Read it again before writing to it."
        )

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        if result.created:
            return f"File created successfully at: {result.path}{STATE_CURRENT}"
        return f"The file {result.path} has been updated successfully.{STATE_CURRENT}"

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        edit = edits[0]
        if edit.replace_all:
            return (
                f"The file {result.path} has been updated. All occurrences were successfully "
                f"replaced.{STATE_CURRENT}"
            )
        return f"The file {result.path} has been updated successfully.{STATE_CURRENT}"

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        """The failure, then the string the model asked to replace."""
        if error.kind == "not_found":
            return f"String to replace not found in file.\nString: {old}"
        if error.kind == "ambiguous":
            return (
                f"The string to replace occurs {error.count} times and replace_all is false. "
                "Set replace_all to true to change every occurrence, or add surrounding context "
                f"so that it matches one place only.\nString: {old}"
            )
        return error.message

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
