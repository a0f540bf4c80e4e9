"""opencode (sst): `Error: ` failures, `<bash_metadata>` footers."""

from __future__ import annotations

from oiexec.tools.style import Style


class OpencodeStyle(Style):
    name = "opencode"

    def error(self, message: str) -> str:
        return f"Error: {message}"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
