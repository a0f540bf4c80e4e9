"""Each upstream product's wording of tool results, one module per product.

A manifest names a style (`style = "claude"` for the harness, `render = "qwen"` per tool);
`StyleName` validates the name when the manifest loads, so a typo is an error, not a silent
fall back to the plain wording. Adding a product means adding its module, its name to
`StyleName` and its class to `STYLES`; no tool changes.
"""

from __future__ import annotations

from typing import Literal, get_args

from oiexec.harness.styles.claude import ClaudeStyle
from oiexec.harness.styles.claude_bare import ClaudeBareStyle
from oiexec.harness.styles.deepseek import DeepseekStyle
from oiexec.harness.styles.kimi_cli import KimiCliStyle
from oiexec.harness.styles.kimi_code import KimiCodeStyle
from oiexec.harness.styles.mini import MiniStyle, MiniTextStyle
from oiexec.harness.styles.opencode import OpencodeStyle
from oiexec.harness.styles.qwen import QwenStyle
from oiexec.harness.styles.swe import SweStyle
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

STYLES: dict[str, type[Style]] = {
    "plain": Style,
    "claude": ClaudeStyle,
    "claude-bare": ClaudeBareStyle,
    "kimi-cli": KimiCliStyle,
    "kimi-code": KimiCodeStyle,
    "qwen": QwenStyle,
    "opencode": OpencodeStyle,
    "deepseek": DeepseekStyle,
    "mini": MiniStyle,
    "mini-text": MiniTextStyle,
    "swe": SweStyle,
}

assert set(get_args(StyleName)) == set(STYLES), "StyleName and STYLES disagree"


def style_for(name: StyleName) -> Style:
    """The `Style` named `name`."""
    return STYLES[name]()
