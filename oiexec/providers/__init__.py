"""Provider wires: Responses, Chat Completions and Anthropic Messages over SSE, with retries."""

from __future__ import annotations

from oiexec.providers.chat import ChatClient
from oiexec.providers.http import RetryTiming
from oiexec.providers.registry import create_client
from oiexec.providers.responses import ResponsesClient

__all__ = ["ChatClient", "ResponsesClient", "RetryTiming", "create_client"]
