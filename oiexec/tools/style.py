"""`Style`: how a tool's typed result is worded for the model.

Tools compute product-neutral results (a read window, a command run, a grep result) and hand
them to the call's `Style`, which turns them into the text one upstream product's models were
tuned on. This base class is the plain wording used when a manifest names no product; each
product overrides what it words differently in its own module under `oiexec/harness/styles/`,
so no tool ever branches on a product name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from oiexec.tools.layout import cat_n, excerpt, rg_lines, todo_lines, tree
from oiexec.tools.results import CommandRun, Result, TaskReport, TaskStarted
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import (
        Edit,
        GlobResult,
        GrepResult,
        Listing,
        ReadGate,
        ReadResult,
        ReplaceResult,
        TodoItem,
        WriteResult,
    )


class Style:
    """The plain wording; subclasses (one per upstream product) override methods."""

    name: ClassVar[str] = "plain"

    def error(self, message: str) -> str:
        """A failed call (bad arguments, a failed edit) in the product's convention."""
        return message

    # --- commands (shell, background tasks, interpreters, exec_command) ------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        """A shell command that ran (`run.text`: its output and the sandbox's notes), its
        output cut to about `max_chars`; `timeout_s` is the limit it ran under."""
        text = cut_middle(run.text, max_chars)
        return Result(f"Exit code: {run.exit_code}\nOutput:\n{text}", run.failed)

    def timeout_note(self, timeout_s: float) -> str:
        return f"Command timed out after {timeout_s:g} seconds and was killed."

    def background_started(self, task: TaskStarted) -> str:
        """A command now running in the background, and how to follow it."""
        return (
            f"Started background task {task.task_id} (pid {task.pid}); output file: "
            f"{task.output_path}"
        )

    def task_report(self, report: TaskReport) -> str:
        """A background command's state and output so far."""
        tail = "" if report.exit_code is None else f", exit code {report.exit_code}"
        return f"Task {report.task_id}: {report.status}{tail}\n{report.output}"

    def task_stopped(self, task_id: str, command: str) -> str:
        return f"Stopped background task {task_id}."

    # --- files (read, write, edit, glob, grep, list, patch, todos) -------------------------

    def read(self, result: ReadResult) -> str:
        """A window of a file."""
        if result.past_end:
            return (
                f"{result.path} has {result.total_lines} lines; line {result.start_line} is "
                "past its end."
            )
        if result.is_empty_file:
            return f"{result.path} is empty."
        return cat_n(result.lines, result.start_line)

    def read_unchanged(self, path: Path, *, cwd: Path) -> str:
        """A re-read of a window that has not changed since the model last read it (`cwd`:
        the run's directory, for products that name the file relative to it)."""
        return f"{path} is unchanged since it was last read; that earlier result is current."

    def read_failed(self, error: ToolInputError, *, cwd: Path) -> Result:
        """A read that found no readable text (missing, a directory, binary); `cwd` is the
        run's directory, which some products name to help with a relative path."""
        return Result(self.error(error.message), True)

    def read_gate(self, gate: ReadGate, path: Path, *, overwrite: bool = False) -> str | None:
        """The refusal to change a file not read (or changed) since; None lets the write go.
        `overwrite`: a whole-file write rather than an edit."""
        # Imported here: styles load on the native path, which must not import the fs tools.
        from oiexec.tools.fs.state import ReadGate

        if gate in (ReadGate.OK, ReadGate.NEW_FILE):
            return None
        if gate is ReadGate.NOT_READ:
            return self.not_read(path, overwrite=overwrite)
        return self.changed_since_read(path)

    def not_read(self, path: Path, *, overwrite: bool = False) -> str:
        return f"{path} has not been read yet; read it before changing it."

    def changed_since_read(self, path: Path) -> str:
        return f"{path} changed after it was last read; read it again before changing it."

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        """A whole-file write (or an append)."""
        verb = "Created" if result.created else "Appended to" if appended else "Wrote"
        return f"{verb} {result.path} ({result.bytes_written} bytes)."

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        """Exact-text edits that all applied."""
        return f"Edited {result.path}: {result.replacements} replacement(s)."

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        """A failed exact-text edit restated (`old`: the text the model asked to replace)."""
        return error.message

    def edited_region(self, path: Path, after: str, first: int, last: int) -> str:
        """An edit of lines `first`..`last`, shown with the numbered lines around it."""
        return f"Edited {path}:\n{excerpt(after, first, last)}"

    def globbed(self, result: GlobResult, *, pattern: str, root: Path) -> str:
        if not result.paths:
            return f'No files match "{pattern}" in {root}.'
        text = "\n".join(str(p) for p in result.paths)
        return text + "\n(more matches not shown)" if result.truncated else text

    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        query = result.query
        if query.output_mode == "files_with_matches":
            text = "\n".join(str(p) for p in result.files)
        elif query.output_mode == "count":
            text = "\n".join(f"{c.path}:{c.count}" for c in result.counts)
        else:
            text = rg_lines(result, line_numbers=line_numbers)
        return text or f'No matches for "{query.pattern}" in {query.path}.'

    def listed(self, listing: Listing) -> str:
        """A directory's entries as a tree under its root."""
        if not listing.entries:
            return f"{listing.root}/ (empty)"
        return f"{listing.root}/\n{tree(listing)}"

    def todos_updated(self, items: Sequence[TodoItem]) -> str:
        """The reply to a whole-list todo write."""
        return (
            "Todos have been modified successfully. Keep using the todo list to track your "
            "progress, and move on with the current task.\n" + todo_lines(items)
        )

    def todos_current(self, items: Sequence[TodoItem]) -> str:
        """The list as it stands (a todo write that sent no list reads it back)."""
        return todo_lines(items)

    def submit_review(self, diff: str) -> str:
        """The first `submit` of a harness that asks for a review before submitting."""
        return f"Review the diff of your changes, then submit again to confirm:\n\n{diff}"

    def submission(self, diff: str) -> str:
        """What a `submit` that ends the run shows (it submits `diff`)."""
        return diff
