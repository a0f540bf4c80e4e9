"""Output caps: token-budgeted head-and-tail cuts (Codex's `tool_output_token_limit`) and a
character-budgeted one for the products that count characters.

The token arithmetic lives in `oiexec.core.tokens` (the agent loop's compaction uses the same
unit); it is re-exported here for the tools.
"""

from __future__ import annotations

from oiexec.core.tokens import BYTES_PER_TOKEN, approx_tokens, truncate_middle

__all__ = ["BYTES_PER_TOKEN", "approx_tokens", "cut_middle", "truncate_middle"]


def cut_middle(text: str, limit: int) -> str:
    """Head and tail of `text` around an elision note, at most about `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return (
        f"{text[:half]}\n\n... [{len(text) - 2 * half} characters truncated] ...\n\n{text[-half:]}"
    )
