"""DeepSeek TUI: `STDOUT:`/`STDERR:` blocks and short edit notes."""

from __future__ import annotations

from oiexec.tools.style import Style


class DeepseekStyle(Style):
    name = "deepseek"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
