"""SWE-agent: its observation and editor wording."""

from __future__ import annotations

from oiexec.tools.style import Style


class SweStyle(Style):
    name = "swe"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
