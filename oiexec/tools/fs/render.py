"""Renderers: typed tool results -> the exact text each upstream harness shows its model.

Each function is small and pure; harness manifests name them. Formats (numbering widths,
tags, headers, footers) follow the upstream tools; the wording of notes is this project's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.tools.fs.glob import GlobResult
from oiexec.tools.fs.grep import GrepResult
from oiexec.tools.fs.listing import Listing
from oiexec.tools.fs.read import ReadResult
from oiexec.tools.fs.state import ReadGate
from oiexec.tools.fs.todo import TodoItem
from oiexec.tools.fs.walk import WalkEntry

NO_FILES = "No files found"

# --- line numbering -----------------------------------------------------------------------


def cat_n(lines: Sequence[str], start: int = 1, *, width: int = 6, sep: str = "\t") -> str:
    """`cat -n` numbering: the number right-aligned in `width` columns, `sep`, the line."""
    return "\n".join(f"{n:>{width}}{sep}{line}" for n, line in enumerate(lines, start=start))


# --- Claude Code / zcode ------------------------------------------------------------------


def claude_read(result: ReadResult) -> str:
    """Claude Code `Read`: `cat -n` with a tab, or a reminder for empty/short files."""
    if result.past_end:
        return (
            "<system-reminder>Warning: the file exists but is shorter than the provided offset "
            f"({result.start_line}). The file has {result.total_lines} lines.</system-reminder>"
        )
    if result.is_empty_file:
        return (
            "<system-reminder>Warning: the file exists but its contents are empty."
            "</system-reminder>"
        )
    return cat_n(result.lines, result.start_line)


def claude_read_unchanged(path: Path) -> str:
    """Claude Code / zcode answer to a re-read of an unchanged window."""
    return (
        f"File unchanged since last read: {path}. The earlier Read result in this "
        "conversation is still current; refer to it instead of reading again."
    )


def claude_tool_error(message: str) -> str:
    """Claude Code wraps tool failures (sent with `is_error: true`)."""
    return f"<tool_use_error>{message}</tool_use_error>"


def claude_edit(path: Path, *, replace_all: bool = False, old: str = "", new: str = "") -> str:
    if replace_all:
        return (
            f"The file {path} has been updated. All occurrences of '{old}' were successfully "
            f"replaced with '{new}'."
        )
    return f"The file {path} has been updated successfully."


def claude_bare_edit(path: Path) -> str:
    """claude-code-bare: the edit result also says the model's view of the file is current."""
    return (
        f"The file {path} has been updated successfully. Your last Read of it plus this edit "
        "is its current state; no need to read it again."
    )


def claude_write(path: Path, *, created: bool) -> str:
    if created:
        return f"File created successfully at: {path}"
    return f"The file {path} has been updated successfully."


def read_gate_message(
    gate: ReadGate, path: Path, style: Literal["claude", "opencode", "qwen"] = "claude"
) -> str | None:
    """The refusal a harness gives for writing a file not read (or changed) since; None = OK."""
    if gate in (ReadGate.OK, ReadGate.NEW_FILE):
        return None
    if style == "opencode":
        if gate is ReadGate.NOT_READ:
            return f"You must read file {path} before overwriting it. Use the Read tool first"
        return f"File {path} has been modified since it was last read. Please read it again."
    if style == "qwen":
        if gate is ReadGate.NOT_READ:
            return f"File {path} has not been read yet; read it with read_file before changing it."
        return f"File {path} changed on disk after it was read; read it again before changing it."
    if gate is ReadGate.NOT_READ:
        return "File has not been read yet. Read it first before writing to it."
    return (
        "File has been modified since read, either by the user or by a linter. "
        "Read it again before attempting to write it."
    )


def claude_glob(result: GlobResult) -> str:
    if not result.paths:
        return NO_FILES
    text = "\n".join(str(p) for p in result.paths)
    if result.truncated:
        text += "\n(Results are truncated. Consider using a more specific path or pattern.)"
    return text


def rg_lines(result: GrepResult, *, line_numbers: bool = True) -> str:
    """ripgrep's own layout: `path:N:text` for matches, `path-N-text` for context, `--`
    between separated groups (without numbers: `path:text` / `path-text`)."""
    out: list[str] = []
    previous: tuple[Path, int] | None = None
    q = result.query
    separated = bool(q.before or q.after or q.context)
    for line in result.lines:
        jump = previous is not None and (previous[0] != line.path or line.line > previous[1] + 1)
        if separated and jump:
            out.append("--")
        mark = ":" if line.is_match else "-"
        number = f"{line.line}{mark}" if line_numbers else ""
        out.append(f"{line.path}{mark}{number}{line.text}")
        previous = (line.path, line.line)
    return "\n".join(out)


def claude_grep(result: GrepResult, *, line_numbers: bool = True) -> str:
    """Claude Code `Grep` in each output mode."""
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
    return rg_lines(result, line_numbers=line_numbers) if result.lines else "No matches found"


# --- kimi ---------------------------------------------------------------------------------


def kimi_read_message(
    result: ReadResult, *, max_lines: int = 1000, max_bytes: int = 100 * 1024
) -> str:
    """The status sentence kimi's ReadFile reports next to the numbered lines."""
    n = len(result.lines)
    if not n:
        message = "No lines read from file."
    else:
        message = f"{n} lines read from file starting from line {result.start_line}."
    message += f" Total lines in file: {result.total_lines}."
    if result.stopped_by == "max_lines":
        message += f" Max {max_lines} lines reached."
    elif result.stopped_by == "max_bytes":
        message += f" Max {max_bytes} bytes reached."
    elif result.stopped_by == "eof":
        message += " End of file reached."
    if result.truncated_lines:
        message += f" Lines {list(result.truncated_lines)} were truncated."
    return message


def kimi_read_output(result: ReadResult) -> str:
    """kimi's `%6d\\t%s` numbered lines."""
    return cat_n(result.lines, result.start_line)


def kimi_cli_parts(message: str | None, output: str, *, error: bool = False) -> list[str]:
    """kimi-cli tool-result parts: `<system>` message first (ERROR-prefixed on failure),
    then the output; nothing at all becomes the empty-output note."""
    parts: list[str] = []
    if error:
        parts.append(f"<system>ERROR: {message or ''}</system>")
    elif message:
        parts.append(f"<system>{message}</system>")
    if output:
        parts.append(output)
    return parts or ["<system>Tool output is empty.</system>"]


def kimi_code_read(
    result: ReadResult, *, max_lines: int = 1000, max_bytes: int = 100 * 1024
) -> str:
    """Kimi Code `Read`: numbered lines with the status as a `<system>` footer."""
    footer = (
        f"<system>{kimi_read_message(result, max_lines=max_lines, max_bytes=max_bytes)}</system>"
    )
    output = kimi_read_output(result)
    return f"{output}\n{footer}" if output else footer


def kimi_todos(items: Sequence[TodoItem]) -> str:
    if not items:
        return "Todo list cleared."
    body = "\n".join(f"  [{item.status}] {item.content}" for item in items)
    return f"Todo list updated.\nCurrent todo list:\n{body}"


# --- opencode -----------------------------------------------------------------------------


def opencode_read(result: ReadResult, *, max_bytes_label: str = "50 KB") -> str:
    """opencode `read`: tagged, `N: text` lines, and a closing status line."""
    body = "\n".join(f"{n}: {line}" for n, line in enumerate(result.lines, result.start_line))
    nxt = result.end_line + 1
    if result.stopped_by == "max_bytes":
        status = (
            f"(Output capped at {max_bytes_label}. Showing lines {result.start_line}-"
            f"{result.end_line}. Use offset={nxt} to continue.)"
        )
    elif result.end_line < result.total_lines:
        status = (
            f"(Showing lines {result.start_line}-{result.end_line} of {result.total_lines}. "
            f"Use offset={nxt} to continue.)"
        )
    else:
        status = f"(End of file - total {result.total_lines} lines)"
    content = f"{body}\n\n{status}" if body else status
    return f"<path>{result.path}</path>\n<type>file</type>\n<content>\n{content}\n</content>"


def opencode_glob(result: GlobResult) -> str:
    return claude_glob(result)


def opencode_grep(result: GrepResult) -> str:
    """opencode `grep`: a count, then matches grouped per file."""
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


# --- qwen-code ----------------------------------------------------------------------------


def qwen_read(result: ReadResult) -> str:
    """qwen-code `read_file`: raw text; a partial read gets a range header and `---`."""
    text = "\n".join(result.lines)
    if result.is_complete or result.is_empty_file:
        return text
    return (
        f"Showing lines {result.start_line}-{result.end_line} of {result.total_lines} "
        f"total lines.\n---\n{text}"
    )


def qwen_listing(listing: Listing) -> str:
    """qwen-code `list_directory`: directories first, then files, by name."""
    top = [e for e in listing.entries if e.depth == 1]
    ordered = sorted(top, key=lambda e: (not e.is_dir, e.rel.lower()))
    lines = [f"[DIR] {e.rel}" if e.is_dir else e.rel for e in ordered]
    if not lines:
        return f"Directory {listing.root} is empty."
    return f"Directory listing for {listing.root}:\n" + "\n".join(lines)


def qwen_edit_not_found(path: Path) -> str:
    return (
        f"Failed to edit, 0 occurrences found for old_string in {path}. No edits made. The "
        "exact text in old_string was not found; re-read the file and check whitespace, "
        "indentation and context."
    )


# --- trees --------------------------------------------------------------------------------


def tree(listing: Listing, *, dir_suffix: str = "/") -> str:
    """Box-drawing tree of a listing (qwen's setup message, kimi's working-directory view)."""
    children: dict[str, list[WalkEntry]] = {}
    for entry in listing.entries:
        parent = entry.rel.rsplit("/", 1)[0] if "/" in entry.rel else ""
        children.setdefault(parent, []).append(entry)
    lines: list[str] = []

    def draw(parent: str, prefix: str) -> None:
        kids = children.get(parent, [])
        for index, entry in enumerate(kids):
            last = index == len(kids) - 1
            name = entry.rel.rsplit("/", 1)[-1] + (dir_suffix if entry.is_dir else "")
            lines.append(f"{prefix}{'└── ' if last else '├── '}{name}")
            if entry.is_dir:
                draw(entry.rel, prefix + ("    " if last else "│   "))

    draw("", "")
    if listing.truncated:
        lines.append(f"... ({listing.total - len(listing.entries)} more entries)")
    return "\n".join(lines)


def claude_ls(listing: Listing) -> str:
    """Claude Code 1.x `LS`: an indented `- name` outline under the root."""
    lines = [f"- {listing.root}/"]
    for entry in sorted(listing.entries, key=lambda e: e.rel.split("/")):
        suffix = "/" if entry.is_dir else ""
        lines.append(f"{'  ' * entry.depth}- {entry.rel.rsplit('/', 1)[-1]}{suffix}")
    return "\n".join(lines)


# --- SWE-agent ----------------------------------------------------------------------------

SWE_CLIP_CHARS = 16_000
SWE_CLIPPED = (
    "<response clipped><NOTE>Only part of this output is shown to save context. Search inside "
    "the file with `grep -n` to find the line numbers you need, then view that range.</NOTE>"
)


def swe_clip(text: str, limit: int = SWE_CLIP_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + SWE_CLIPPED


def swe_view(result: ReadResult) -> str:
    """`str_replace_editor view` on a file."""
    numbered = cat_n(result.lines, result.start_line)
    return swe_clip(f"Here's the result of running `cat -n` on {result.path}:\n{numbered}\n")


def swe_view_dir(listing: Listing) -> str:
    """`str_replace_editor view` on a directory (two levels, hidden items excluded)."""
    paths = [str(listing.root)] + [str(e.path) for e in listing.entries]
    return (
        f"Here's the files and directories up to 2 levels deep in {listing.root}, "
        "excluding hidden items:\n" + "\n".join(sorted(paths)) + "\n"
    )


def swe_snippet(path: Path, after: str, first: int, last: int, *, context: int = 4) -> str:
    """The numbered excerpt around an edit (from `context` lines before to after it)."""
    lines = after.split("\n")
    start = max(1, first - context)
    end = min(len(lines), max(last, first) + context)
    return cat_n(lines[start - 1 : end], start)


def swe_edited(path: Path, after: str, first: int, last: int) -> str:
    snippet = swe_snippet(path, after, first, last)
    return (
        f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet "
        f"of {path}:\n{snippet}\nReview the changes and make sure they are as expected. Edit "
        "the file again if necessary."
    )


def swe_created(path: Path) -> str:
    return f"File created successfully at: {path}"


def swe_error(error: ToolInputError, *, old: str = "") -> str:
    """SWE-agent's wording for replace failures; other errors keep their message."""
    if error.kind == "not_found":
        return (
            f"No replacement was performed, old_str `{old}` did not appear verbatim in "
            f"{error.path}."
        )
    if error.kind == "ambiguous":
        return (
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines "
            f"{list(error.lines)}. Please ensure it is unique"
        )
    return error.message


def swe_observation(text: str) -> str:
    if not text.strip():
        return "Your command ran successfully and did not produce any output."
    return f"OBSERVATION:\n{text}"


# --- mini-swe-agent -----------------------------------------------------------------------

MINI_LIMIT = 10_000
MINI_WARNING = (
    "The output of your last command was too long.\n"
    "Run a command that prints less: view parts of files with head, tail or sed -n, narrow "
    "grep or find patterns, or send the output to a file and search that file."
)


def mini_observation(
    returncode: int,
    output: str,
    *,
    exception: str | None = None,
    limit: int = MINI_LIMIT,
    head: int = 5_000,
    tail: int = 5_000,
) -> str:
    """mini-swe-agent observation: return code and output, or head/tail with the elided
    character count when the output reaches `limit` characters."""
    parts: list[str] = []
    if exception:
        parts.append(f"<exception>{exception}</exception>")
    parts.append(f"<returncode>{returncode}</returncode>")
    if len(output) < limit:
        parts.append(f"<output>\n{output}</output>")
    else:
        elided = len(output) - head - tail
        parts.append(
            f"<warning>\n{MINI_WARNING}\n</warning>"
            f"<output_head>\n{output[:head]}\n</output_head>\n"
            f"<elided_chars>\n{elided} characters elided\n</elided_chars>\n"
            f"<output_tail>\n{output[-tail:] if tail else ''}\n</output_tail>"
        )
    return "\n".join(parts)
