"""opencode 1.18.33: failures as their bare message, command output as printed (no exit-code
footer), XML-tagged reads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.harness.styles.claude import NO_FILES
from oiexec.tools.layout import todo_lines
from oiexec.tools.results import CommandRun, Result
from oiexec.tools.style import Style
from oiexec.tools.truncate import cut_middle

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import (
        Edit,
        GlobResult,
        GrepResult,
        ReadResult,
        ReplaceResult,
        TodoItem,
        WriteResult,
    )

#: How the read tool names its byte cap in the status line.
_MAX_BYTES_LABEL = "50 KB"
#: A long command output keeps its last lines (and at most the byte cap).
TAIL_LINES = 2000


def tail(text: str, max_lines: int, max_bytes: int) -> str:
    """The end of `text`: its last `max_lines` lines (the empty one after a final line break
    counts), fewer if they pass `max_bytes`."""
    kept = text.split("\n")[-max_lines:]
    size = sum(len(line.encode("utf-8")) + 1 for line in kept) - 1
    while len(kept) > 1 and size > max_bytes:
        size -= len(kept.pop(0).encode("utf-8")) + 1
    return "\n".join(kept)


class OpencodeStyle(Style):
    name = "opencode"

    # A failed tool's result is its message alone (the chat wire carries no error flag).

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        """The output as printed, trailing line break included; a non-zero exit adds nothing
        (the model reads the failure from the output); only a timeout gets a footer."""
        if run.saved_to is not None:
            text = (
                f"...output truncated...\n\nFull output saved to: {run.saved_to}\n\n"
                f"{tail(run.text, TAIL_LINES, max_chars)}"
            )
        else:
            text = cut_middle(run.text, max_chars) or "(no output)"
        if run.timed_out:
            # The client's `<shell_metadata>` block and layout; the note is our own words.
            text += (
                "\n\n<shell_metadata>\nThe command was stopped when it ran past its timeout "
                f"of {timeout_s * 1000:g} ms. If it needs more time and is not waiting for "
                "input, run it again with a larger timeout (in milliseconds).\n</shell_metadata>"
            )
        return Result(text)

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`read`: tagged, `N: text` lines, and a closing status line."""
        body = "\n".join(f"{n}: {line}" for n, line in enumerate(result.lines, result.start_line))
        nxt = result.end_line + 1
        if result.stopped_by == "max_bytes":
            status = (
                f"(Output capped at {_MAX_BYTES_LABEL}. Showing lines {result.start_line}-"
                f"{result.end_line}. Use offset={nxt} to continue.)"
            )
        elif result.end_line < result.total_lines:
            status = (
                f"(Showing lines {result.start_line}-{result.end_line} of {result.total_lines}. "
                f"Use offset={nxt} to continue.)"
            )
        else:
            status = f"(End of file - total {result.total_lines} lines)"
        content = f"{body}\n\n{status}"
        return f"<path>{result.path}</path>\n<type>file</type>\n<content>\n{content}\n</content>"

    def read_failed(self, error: ToolInputError, *, cwd: Path) -> Result:
        if error.kind == "missing" and error.path is not None:
            return Result(f"File not found: {error.path}", True)
        if error.kind == "binary" and error.path is not None:
            return Result(f"Cannot read binary file: {error.path}", True)
        return super().read_failed(error, cwd=cwd)

    def not_read(self, path: Path, *, overwrite: bool = False) -> str:
        return f"{path} has not been read yet; read it with the read tool before overwriting it."

    def changed_since_read(self, path: Path) -> str:
        return f"{path} has changed on disk since your last read of it; read it again first."

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        return "Wrote file successfully."

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        return "Edit applied successfully."

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        if error.kind == "not_found":
            return (
                "oldString does not occur in the file. It has to match the file's text exactly, "
                "whitespace, indentation and line endings included."
            )
        if error.kind == "ambiguous":
            return (
                "oldString occurs more than once in the file. Include more of the lines around "
                "it so that it matches in one place only."
            )
        return error.message

    def globbed(self, result: GlobResult, *, pattern: str, root: Path) -> str:
        if not result.paths:
            return NO_FILES
        text = "\n".join(str(p) for p in result.paths)
        if result.truncated:
            text += (
                f"\n\n(Results are truncated: showing first {len(result.paths)} results. "
                "Consider using a more specific path or pattern.)"
            )
        return text

    def grepped(self, result: GrepResult, *, line_numbers: bool = True) -> str:
        """`grep`: a count, then the matches grouped per file."""
        matches = [line for line in result.lines if line.is_match]
        if not matches:
            return NO_FILES
        out = [f"Found {len(matches)} matches"]
        current: Path | None = None
        for line in matches:
            if line.path != current:
                out.append("")
                out.append(f"{line.path}:")
                current = line.path
            out.append(f"  Line {line.line}: {line.text}")
        return "\n".join(out)

    def todos_updated(self, items: Sequence[TodoItem]) -> str:
        unfinished = sum(1 for item in items if not item.finished)
        return f"{unfinished} todos\n" + todo_lines(items)
