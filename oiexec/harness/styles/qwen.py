"""Qwen Code: Gemini-CLI-derived result sentences."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.tools.layout import rg_lines
from oiexec.tools.results import CommandRun, Result, TaskStarted
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import (
        Edit,
        GlobResult,
        GrepResult,
        Listing,
        ReadResult,
        ReplaceResult,
        WriteResult,
    )


class QwenStyle(Style):
    name = "qwen"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = cut_middle(run.text.rstrip("\n"), max_chars) or "(empty)"
        if run.timed_out:
            text += f"\n{self.timeout_note(timeout_s)}"
        if run.failed:
            return Result(f"{text}\nExit Code: {run.exit_code}")
        return Result(text)

    def background_started(self, task: TaskStarted) -> str:
        return (
            f"Command is running in the background.\ntask_id: {task.task_id}\n"
            f"Background PIDs: {task.pid}\nOutput file: {task.output_path}\n"
            "Stop it with task_stop."
        )

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`read_file`: the raw text; a partial read gets a range header and `---`."""
        text = "\n".join(result.lines)
        if result.is_complete or result.is_empty_file:
            return text
        return (
            f"Showing lines {result.start_line}-{result.end_line} of {result.total_lines} "
            f"total lines.\n---\n{text}"
        )

    def not_read(self, path: Path) -> str:
        return f"File {path} has not been read yet; read it with read_file before changing it."

    def changed_since_read(self, path: Path) -> str:
        return f"File {path} changed on disk after it was read; read it again before changing it."

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        if result.created:
            return f"Successfully created and wrote to new file: {result.path}."
        return f"Successfully overwrote file: {result.path}."

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        return f"Successfully modified file: {result.path} ({result.replacements} replacements)."

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        if error.kind != "not_found":
            return error.message
        return (
            f"Failed to edit, 0 occurrences found for old_string in {error.path}. No edits "
            "made. The exact text in old_string was not found; re-read the file and check "
            "whitespace, indentation and context."
        )

    def globbed(self, result: GlobResult, *, pattern: str, root: Path) -> str:
        if not result.paths:
            return f'No files found matching pattern "{pattern}" within {root}'
        listed = "\n".join(str(p) for p in result.paths)
        return (
            f'Found {result.total} file(s) matching "{pattern}" within {root}, sorted by '
            f"modification time (newest first):\n{listed}"
        )

    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        if not result.lines:
            query = result.query
            return f'No matches found for pattern "{query.pattern}" in {query.path}.'
        return rg_lines(result)

    def listed(self, listing: Listing) -> str:
        """`list_directory`: directories first, then files, by name."""
        top = [e for e in listing.entries if e.depth == 1]
        ordered = sorted(top, key=lambda e: (not e.is_dir, e.rel.lower()))
        lines = [f"[DIR] {e.rel}" if e.is_dir else e.rel for e in ordered]
        if not lines:
            return f"Directory {listing.root} is empty."
        return f"Directory listing for {listing.root}:\n" + "\n".join(lines)
