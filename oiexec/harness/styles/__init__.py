"""Each upstream product's wording of tool results, one module per product.

A manifest names a style (`style = "claude"` for the harness, `render = "qwen"` per tool);
`StyleName` validates the name when the manifest loads, so a typo is an error, not a silent
fall back to the plain wording. Adding a product means adding its module, its name to
`StyleName` and where its class lives to `STYLES`; no tool changes.
"""

from __future__ import annotations

from typing import Literal, get_args

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

#: Where each style's class lives (module in this package, class name). A run imports only
#: the styles its harness names, not every product's wording.
STYLES: dict[str, tuple[str, str]] = {
    "plain": ("", "Style"),
    "claude": ("claude", "ClaudeStyle"),
    "claude-bare": ("claude_bare", "ClaudeBareStyle"),
    "kimi-cli": ("kimi_cli", "KimiCliStyle"),
    "kimi-code": ("kimi_code", "KimiCodeStyle"),
    "qwen": ("qwen", "QwenStyle"),
    "opencode": ("opencode", "OpencodeStyle"),
    "deepseek": ("deepseek", "DeepseekStyle"),
    "mini": ("mini", "MiniStyle"),
    "mini-text": ("mini", "MiniTextStyle"),
    "swe": ("swe", "SweStyle"),
}

assert set(get_args(StyleName)) == set(STYLES), "StyleName and STYLES disagree"


def style_for(name: str) -> Style:
    """The `Style` named `name` (a `StyleName`, checked when its manifest loaded)."""
    module, attr = STYLES[name]
    if not module:
        return Style()
    # __import__ rather than importlib, so `-X importtime` reports the module like any other.
    package = __import__(f"{__name__}.{module}", fromlist=[attr])
    style: type[Style] = getattr(package, attr)
    return style()
