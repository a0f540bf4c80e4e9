"""Token arithmetic shared by the tools (output caps) and the agent loop (compaction).

Tokens are approximated as UTF-8 bytes / 4, rounded up: what Codex reports as the "Original
token count" and close enough to real tokenizers for budgeting. It lives in core because the
loop may import nothing else, and the tool caps and the compaction must agree on the unit.
"""

from __future__ import annotations

from oiexec.core.redact import redact

__all__ = ["BYTES_PER_TOKEN", "approx_tokens", "truncate_middle"]

BYTES_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """Approximate token count of `text`."""
    return _tokens_for_bytes(len(text.encode("utf-8")))


def truncate_middle(text: str, max_tokens: int) -> str:
    """`text` unchanged if it fits in `max_tokens`, else its head and tail around a marker
    `…N tokens truncated…`. The head and tail split the budget evenly; cuts never split a
    character. A text that is cut is redacted first: a cut through a secret would leave a
    fragment that no longer matches."""
    data = text.encode("utf-8")
    budget = max(0, max_tokens) * BYTES_PER_TOKEN
    if len(data) <= budget:
        return text
    text = redact(text)
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    head_len = budget // 2
    tail_len = budget - head_len
    # Decoding with "ignore" drops a character cut in half at either edge.
    head = data[:head_len].decode("utf-8", errors="ignore")
    tail = data[len(data) - tail_len :].decode("utf-8", errors="ignore") if tail_len else ""
    kept = len(head.encode("utf-8")) + len(tail.encode("utf-8"))
    removed = _tokens_for_bytes(len(data) - kept)
    return f"{head}…{removed} tokens truncated…{tail}"


def _tokens_for_bytes(n: int) -> int:
    return (n + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN
