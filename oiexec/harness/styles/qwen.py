"""Qwen Code 0.15.10: a shell result is a block of `Command:`/`Directory:`/`Output:`/`Error:`/
`Exit Code:`/`Signal:`/`Process Group PGID:` lines, an edit shows the edited region with its
line range, reads return the raw text."""

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
        result = self._command_block(run, timeout_s=timeout_s, max_chars=max_chars)
        if run.saved_to is None:
            return result
        return Result(saved_and_cut(result.text, run.saved_to, max_chars), result.is_error)

    def _command_block(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        output = run.text.rstrip("\n")
        if run.saved_to is None:
            output = cut_middle(output, max_chars)
        if run.timed_out:
            ms = f"{timeout_s * 1000:g}ms"
            if output.strip():
                text = (
                    f"Command timed out after {ms} before it could complete. Below is the "
                    f"output before it timed out:\n{output}"
                )
            else:
                text = (
                    f"Command timed out after {ms} before it could complete. There was no "
                    "output before it timed out."
                )
            return Result(text, True)
        lines = [
            f"Command: {run.command}",
            f"Directory: {run.directory or '(root)'}",
            f"Output: {output or '(empty)'}",
            "Error: (none)",
            f"Exit Code: {'(none)' if run.exit_code is None else run.exit_code}",
            f"Signal: {run.signal or 0}",
            f"Process Group PGID: {'(none)' if run.pgid is None else run.pgid}",
        ]
        return Result("\n".join(lines), run.failed)

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
        if result.final_newline and result.end_line == result.total_lines and result.lines:
            text += "\n"
        if result.is_complete or result.is_empty_file:
            return text
        # Lines count as the client splits the text: a final line break ends an empty line.
        total = result.total_lines + (1 if result.final_newline else 0)
        return (
            f"Showing lines {result.start_line}-{result.end_line} of {total} total lines."
            f"\n\n---\n\n{text}"
        )

    def read_unchanged(self, path: Path, *, cwd: Path) -> str:
        shown = path.relative_to(cwd) if path.is_relative_to(cwd) else path
        # Our own wording of the client's placeholder; the bracketed one-line shape is kept.
        return (
            f"[File {shown} has not changed since you read it in this session; its full "
            "content is in an earlier result of this conversation. If that result is no longer "
            "available (for example after the context was compacted) or something other than "
            "the read and edit tools may have changed the file (a shell command, an MCP tool, "
            "another process), read it again with an explicit offset and limit to get the "
            "current content.]"
        )

    def read_failed(self, error: ToolInputError, *, cwd: Path) -> Result:
        if error.kind == "missing" and error.path is not None:
            return Result(f"File not found: {error.path}", True)
        if error.kind == "binary" and error.path is not None:
            shown = error.path.relative_to(cwd) if error.path.is_relative_to(cwd) else error.path
            return Result(f"Cannot display content of binary file: {shown}", True)
        return super().read_failed(error, cwd=cwd)

    def not_read(self, path: Path, *, overwrite: bool = False) -> str:
        """A write or an edit of a file not read in this session (a partial read is
        enough for an edit; an overwrite replaces everything, so it needs the whole file)."""
        if overwrite:
            return (
                f"File {path} was not read in this session, so it cannot be overwritten yet. "
                "Read the whole file with read_file first: the write replaces all of it, and "
                "anything you have not seen would be lost."
            )
        return (
            f"File {path} was not read in this session, so it cannot be edited yet. Read it "
            "with read_file first; reading just the lines you mean to change (offset and "
            "limit) is enough."
        )

    def changed_since_read(self, path: Path) -> str:
        return f"File {path} changed on disk after it was read; read it again before changing it."

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        if result.created:
            return f"Successfully created and wrote to new file: {result.path}."
        return f"Successfully overwrote file: {result.path}."

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        """The edit, then the changed lines with `SNIPPET_CONTEXT` lines around them."""
        if result.created:  # an empty old_string on a missing file: the whole file is new
            text = f"Created new file: {result.path} with provided content."
            snippet = edit_snippet(None, result.after)
        else:
            text = f"The file: {result.path} has been updated."
            snippet = edit_snippet(result.before, result.after)
        if snippet is None:
            return text
        first, last, total, body = snippet
        return (
            f"{text} Showing lines {first}-{last} of {total} from the edited file:\n\n---\n\n{body}"
        )

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        if error.kind == "ambiguous":
            return (
                f"Failed to edit. Found {error.count} occurrences for old_string in "
                f"{error.path} but replace_all was not enabled."
            )
        if error.kind != "not_found":
            return error.message
        return (
            f"Failed to edit, 0 occurrences found for old_string in {error.path}. No edits "
            "made. old_string must appear in the file exactly as given: check for stray "
            "escaping, whitespace, indentation and the surrounding lines, and look at the "
            "current text with read_file."
        )

    def globbed(self, result: GlobResult, *, pattern: str, root: Path) -> str:
        if not result.paths:
            return f'No files found matching pattern "{pattern}" in {WHERE}'
        listed = "\n".join(str(p) for p in result.paths)
        return (
            f'Found {result.total} file(s) matching "{pattern}" in {WHERE}, sorted by '
            f"modification time (newest first):\n---\n{listed}"
        )

    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        query = result.query
        matches = [line for line in result.lines if line.is_match]
        if not matches:
            return f'No matches found for pattern "{query.pattern}" in {WHERE}.'
        noun = "match" if len(matches) == 1 else "matches"
        return f'Found {len(matches)} {noun} for pattern "{query.pattern}" in {WHERE}:\n---\n' + (
            rg_lines(result)
        )

    def listed(self, listing: Listing) -> str:
        """`list_directory`: directories first, then files, by name."""
        top = [e for e in listing.entries if e.depth == 1]
        ordered = sorted(top, key=lambda e: (not e.is_dir, e.rel.lower()))
        lines = [f"[DIR] {e.rel}" if e.is_dir else e.rel for e in ordered]
        if not lines:
            return f"Directory {listing.root} is empty."
        return f"Listed {len(lines)} item(s) in {listing.root}:\n---\n" + "\n".join(lines)


#: A cut result keeps this many lines at most, a fifth of them (and of the characters) from
#: its start, the rest from its end.
CUT_LINES = 1000
CUT_MARK = "\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n"


def saved_and_cut(text: str, saved_to: Path, max_chars: int) -> str:
    """A result too long to return whole: where the whole is, then its start and its end."""
    lines = text.split("\n")
    keep = min(CUT_LINES, len(lines))
    head_count = max(keep // 5, 1)
    head, used = _take(lines[:head_count], max_chars // 5)
    tail_start = max(len(lines) - (keep - head_count), len(head))
    tail, _ = _take(lines[tail_start:][::-1], max(max_chars - used - len(CUT_MARK), 0), end=True)
    body = "\n".join(head) + CUT_MARK + "\n".join(tail[::-1])
    # The header's line layout and labels are the client's; its sentences are our own.
    return (
        "The tool's output was too long to return whole, so it has been shortened.\n"
        f"The full output has been saved to: {saved_to}\n"
        "Read that file with read_file, by the absolute path above, to see all of it.\n"
        "Below are the start and the end of the output; the marker "
        "'... [CONTENT TRUNCATED] ...' stands where the middle was left out.\n\n"
        f"Truncated part of the output:\n{body}"
    )


def _take(lines: list[str], budget: int, *, end: bool = False) -> tuple[list[str], int]:
    """Lines (in the order given) while they fit `budget` characters, each counting its line
    break; the first that does not fit is cut with `...` (at its start when `end`)."""
    taken: list[str] = []
    used = 0
    for line in lines:
        room = budget - used
        if room <= 0:
            break
        if len(line) + 1 > room:
            part = max(room - 3, 0)
            taken.append("..." + (line[-part:] if part else "") if end else line[:part] + "...")
            return taken, budget
        taken.append(line)
        used += len(line) + 1
    return taken, used


#: How searches name the directory they ran in (the model's workspace).
WHERE = "the workspace directory"
#: Lines of context around an edit's changed lines, and the most changed lines shown.
SNIPPET_CONTEXT = 4
SNIPPET_MAX = 1000


def edit_snippet(before: str | None, after: str) -> tuple[int, int, int, str] | None:
    """(first, last, total, text) of the edited region of `after`, lines counted as split on
    line breaks (a final break ends with an empty line); all of it for a new file (`before`
    None); None when nothing changed or the change is too long to show."""
    new = after.split("\n")
    if before is None:
        return 1, len(new), len(new), after
    old = before.split("\n")
    if before == after or not after:
        return None
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    old_end, new_end = len(old) - 1, len(new) - 1
    while old_end >= start and new_end >= start and old[old_end] == new[new_end]:
        old_end -= 1
        new_end -= 1
    if new_end + 1 - (start + 1) > SNIPPET_MAX:
        return None
    first = max(1, start + 1 - SNIPPET_CONTEXT)
    last = min(len(new), new_end + 1 + SNIPPET_CONTEXT)
    return first, last, len(new), "\n".join(new[first - 1 : last])
