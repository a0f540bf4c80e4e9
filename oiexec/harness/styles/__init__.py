"""Each upstream product's wording of tool results, one module per product.

A manifest names a style (`style = "claude"` for the harness, `render = "qwen"` per tool);
`StyleName` validates the name when the manifest loads, so a typo is an error, not a silent
fall back to the plain wording. Adding a product means adding its module, its name to
`StyleName` and where its class lives to `STYLES`; no tool changes.
"""

from __future__ import annotations

from typing import Literal, get_args

from oiexec.core.lazy import load
from oiexec.tools.style import Style

StyleName = Literal[
    "plain",
    "claude",
    "claude-bare",
    "kimi-cli",
    "kimi-code",
    "qwen",
    "opencode",
    "deepseek",
    "mini",
    "mini-text",
    "swe",
]

#: Where each style's class lives (`module:class`; "" is the plain `Style`). A run imports only
#: the styles its harness names, not every product's wording.
STYLES: dict[str, str] = {
    "plain": "",
    "claude": f"{__name__}.claude:ClaudeStyle",
    "claude-bare": f"{__name__}.claude_bare:ClaudeBareStyle",
    "kimi-cli": f"{__name__}.kimi_cli:KimiCliStyle",
    "kimi-code": f"{__name__}.kimi_code:KimiCodeStyle",
    "qwen": f"{__name__}.qwen:QwenStyle",
    "opencode": f"{__name__}.opencode:OpencodeStyle",
    "deepseek": f"{__name__}.deepseek:DeepseekStyle",
    "mini": f"{__name__}.mini:MiniStyle",
    "mini-text": f"{__name__}.mini:MiniTextStyle",
    "swe": f"{__name__}.swe:SweStyle",
}

assert set(get_args(StyleName)) == set(STYLES), "StyleName and STYLES disagree"


def style_for(name: str) -> Style:
    """The `Style` named `name` (a `StyleName`, checked when its manifest loaded)."""
    target = STYLES[name]
    style: type[Style] = load(target) if target else Style
    return style()
