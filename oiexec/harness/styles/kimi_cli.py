"""Kimi CLI (Moonshot): `<system>` status lines around results."""

from __future__ import annotations

from oiexec.tools.style import Style


class KimiCliStyle(Style):
    name = "kimi-cli"

    def error(self, message: str) -> str:
        return f"<system>ERROR: {message}</system>"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
