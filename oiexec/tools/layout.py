"""Neutral text layouts the styles share: `cat -n` numbering, ripgrep lines, trees, todo lines.

How a product words a result lives in its `Style` (`oiexec.tools.style`, and the product
modules under `oiexec/harness/styles/`); these helpers only lay data out the way common
command-line tools do. The tool result types are imported for type checking only: the styles
load on every path, the native one included, which must not pay for importing the fs tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oiexec.tools.fs.grep import GrepResult
    from oiexec.tools.fs.listing import Listing
    from oiexec.tools.fs.todo import TodoItem
    from oiexec.tools.fs.walk import WalkEntry


def cat_n(lines: Sequence[str], start: int = 1, *, width: int = 6, sep: str = "\t") -> str:
    """`cat -n` numbering: the number right-aligned in `width` columns, `sep`, the line."""
    return "\n".join(f"{n:>{width}}{sep}{line}" for n, line in enumerate(lines, start=start))


def excerpt(text: str, first: int, last: int, *, context: int = 4) -> str:
    """The `cat -n` lines of `text` from `context` lines before line `first` to `context`
    lines after line `last` (the view around an edit)."""
    lines = text.split("\n")
    start = max(1, first - context)
    end = min(len(lines), max(last, first) + context)
    return cat_n(lines[start - 1 : end], start)


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


def tree(listing: Listing, *, dir_suffix: str = "/") -> str:
    """Box-drawing tree of a listing (directory tools, the prompts' working-directory view)."""
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


def todo_lines(items: Sequence[TodoItem]) -> str:
    """One `[status] content` line per todo."""
    return "\n".join(f"[{item.status}] {item.content}" for item in items)
