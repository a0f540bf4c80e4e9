"""Kimi Code: Kimi's `<system>` errors with its own result wording."""

from __future__ import annotations

from oiexec.tools.style import Style


class KimiCodeStyle(Style):
    name = "kimi-code"

    def error(self, message: str) -> str:
        return f"<system>ERROR: {message}</system>"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
