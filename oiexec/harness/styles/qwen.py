"""Qwen Code: Gemini-CLI-derived result sentences."""

from __future__ import annotations

from oiexec.tools.style import Style


class QwenStyle(Style):
    name = "qwen"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
