"""The small pieces that adapt the official MCP SDK to a synchronous, logged run: the SDK's
log records into the run log, tool listing across pages, oiexec's client version."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["LogRelay", "client_version", "list_tools"]


class LogRelay(logging.Handler):
    """The SDK logs what a server did wrong (a non-JSON line on stdout, a process that would
    not die) through `logging`; unconfigured, Python prints that with its traceback on the
    user's terminal. It goes to the run log instead, one line each."""

    def __init__(self, note: Callable[..., None]) -> None:
        super().__init__(level=logging.INFO)
        self._note = note

    def install(self) -> None:
        logger = logging.getLogger("mcp")
        if self not in logger.handlers:
            logger.addHandler(self)
        logger.propagate = False

    def remove(self) -> None:
        logging.getLogger("mcp").removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            detail = f": {record.exc_info[1]}" if record.exc_info and record.exc_info[1] else ""
            self._note(
                "mcp.sdk", level=record.levelname.lower(), message=record.getMessage() + detail
            )


async def list_tools(session: Any) -> list[Any]:
    import mcp_types

    tools: list[Any] = []
    cursor: str | None = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        tools.extend(result.tools)
        cursor = result.next_cursor
        if not cursor:
            return tools


def client_version() -> str:
    """oiexec's version for `clientInfo`, read from the installed distribution (importing the
    package root would pull in the Python API, which sits above this layer)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oiexec")
    except PackageNotFoundError:
        return "0"
