"""Claude Code without its extras (`claude-code-bare`): Claude wording, terser edits."""

from __future__ import annotations

from oiexec.harness.styles.claude import ClaudeStyle


class ClaudeBareStyle(ClaudeStyle):
    name = "claude-bare"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
