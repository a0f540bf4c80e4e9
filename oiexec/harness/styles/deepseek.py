"""DeepSeek TUI: `STDOUT:`/`STDERR:` blocks and short edit notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oiexec.harness.styles.qwen import QwenStyle
from oiexec.tools.layout import cat_n
from oiexec.tools.style import Style

if TYPE_CHECKING:
    from oiexec.tools.fs import Edit, ReadResult, ReplaceResult, TodoItem, WriteResult


class DeepseekStyle(Style):
    name = "deepseek"

    # --- commands ----------------------------------------------------------------------------

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
    grepped = QwenStyle.grepped

    def todos_updated(self, items: Sequence[TodoItem]) -> str:
        """`checklist_write`: a short acknowledgement, the list shows in the checklist."""
        return "Plan updated"
