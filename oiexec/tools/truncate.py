"""The character-budgeted output cut, for the products that count characters. Token-budgeted
cuts (Codex's `tool_output_token_limit`) live in `oiexec.core.tokens`, shared with the agent
loop's compaction.
"""

from __future__ import annotations

from oiexec.core.redact import redact

__all__ = ["cut_middle"]


def cut_middle(text: str, limit: int) -> str:
    """Head and tail of `text` around an elision note, at most about `limit` characters.
    A text that is cut is redacted first: a cut through a secret would leave a fragment
    that no longer matches."""
    if len(text) <= limit:
        return text
    text = redact(text)
    if len(text) <= limit:
        return text
    half = limit // 2
    return (
        f"{text[:half]}\n\n... [{len(text) - 2 * half} characters truncated] ...\n\n{text[-half:]}"
    )
