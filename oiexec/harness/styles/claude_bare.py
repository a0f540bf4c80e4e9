"""Claude Code without its extras (`claude-code-bare`): Claude wording, terser edits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oiexec.harness.styles.claude import ClaudeStyle

if TYPE_CHECKING:
    from oiexec.tools.fs import Edit, ReplaceResult


class ClaudeBareStyle(ClaudeStyle):
    name = "claude-bare"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------

    def replaced(self, result: ReplaceResult, edits: Sequence[Edit]) -> str:
        """The edit result also says the model's view of the file is current."""
        return (
            f"The file {result.path} has been updated successfully. Your last Read of it plus "
            "this edit is its current state; no need to read it again."
        )
