"""Claude Code (Anthropic): `<tool_use_error>` failures, `cat -n` reads."""

from __future__ import annotations

from oiexec.tools.style import Style


class ClaudeStyle(Style):
    name = "claude"

    def error(self, message: str) -> str:
        return f"<tool_use_error>{message}</tool_use_error>"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
