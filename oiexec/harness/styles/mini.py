"""mini-swe-agent: `<returncode>`/`<output>` observations."""

from __future__ import annotations

from oiexec.tools.style import Style


class MiniStyle(Style):
    name = "mini"

    # --- commands ----------------------------------------------------------------------------

    # --- files -------------------------------------------------------------------------------
