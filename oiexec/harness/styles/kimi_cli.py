"""Kimi CLI (Moonshot): `<system>` status lines around results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from oiexec.tools.layout import cat_n
from oiexec.tools.results import CommandRun, Result, TaskReport, TaskStarted
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import Edit, ReadResult, ReplaceResult, TodoItem, WriteResult


class KimiCliStyle(Style):
    name = "kimi-cli"

    def error(self, message: str) -> str:
        return f"<system>ERROR: {message}</system>"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = cut_middle(run.text, max_chars)
        if run.timed_out:
            head = f"<system>ERROR: Command killed by timeout ({timeout_s:g}s)</system>"
        elif run.failed:
            head = f"<system>ERROR: Command failed with exit code: {run.exit_code}.</system>"
        else:
            head = "<system>Command executed successfully.</system>"
        return Result("\n".join(p for p in (head, text) if p), run.failed)

    def background_started(self, task: TaskStarted) -> str:
        return (
            f"<system>Command started in the background.</system>\ntask_id: {task.task_id}\n"
            f"output_file: {task.output_path}\n"
            "Use TaskOutput to read its output and TaskStop to stop it."
        )

    def task_report(self, report: TaskReport) -> str:
        tail = "" if report.exit_code is None else f", exit code {report.exit_code}"
        head = f"<system>Task {report.task_id} is {report.status}{tail}.</system>"
        return "\n".join(p for p in (head, report.output.rstrip("\n")) if p)

    def task_stopped(self, task_id: str, command: str) -> str:
        return f"<system>Task {task_id} stopped.</system>"

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`ReadFile`: the status sentence as a `<system>` part, then the numbered lines."""
        message = read_message(result)
        return "\n".join(result_parts(message, cat_n(result.lines, result.start_line)))

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        verb = "created" if result.created else "appended to" if appended else "overwritten"
        return (
            f"<system>File successfully {verb}. Current size: {result.bytes_written} bytes."
            "</system>"
        )

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        return (
            f"<system>File successfully edited. Applied {len(edits)} edit(s) with "
            f"{result.replacements} total replacement(s).</system>"
        )

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        if error.kind == "not_found":
            return "No replacements were made: the old string does not occur in the file."
        return error.message

    def todos_updated(self, items: Sequence[TodoItem]) -> str:
        # Kimi says `done` where the shared list says `completed`.
        return todo_text(
            [replace(i, status="done") if i.status == "completed" else i for i in items]
        )

    def todos_current(self, items: Sequence[TodoItem]) -> str:
        return todo_text(items)


def read_message(result: ReadResult) -> str:
    """The status sentence Kimi's file read reports next to the numbered lines."""
    n = len(result.lines)
    if not n:
        message = "No lines read from file."
    else:
        message = f"{n} lines read from file starting from line {result.start_line}."
    message += f" Total lines in file: {result.total_lines}."
    if result.stopped_by == "max_lines":
        message += f" Max {result.max_lines} lines reached."
    elif result.stopped_by == "max_bytes":
        message += f" Max {result.max_bytes} bytes reached."
    elif result.stopped_by == "eof":
        message += " End of file reached."
    if result.truncated_lines:
        message += f" Lines {list(result.truncated_lines)} were truncated."
    return message


def result_parts(message: str | None, output: str, *, error: bool = False) -> list[str]:
    """Tool-result parts: the `<system>` message first (ERROR-prefixed on failure), then the
    output; nothing at all becomes the empty-output note."""
    parts: list[str] = []
    if error:
        parts.append(f"<system>ERROR: {message or ''}</system>")
    elif message:
        parts.append(f"<system>{message}</system>")
    if output:
        parts.append(output)
    return parts or ["<system>Tool output is empty.</system>"]


def todo_text(items: Sequence[TodoItem]) -> str:
    """The todo list as Kimi's todo tool reports it."""
    if not items:
        return "Todo list cleared."
    body = "\n".join(f"  [{item.status}] {item.content}" for item in items)
    return f"Todo list updated.\nCurrent todo list:\n{body}"
