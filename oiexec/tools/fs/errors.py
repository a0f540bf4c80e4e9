"""The one error the file tools raise: bad input the model can fix on its next call."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

ErrorKind = Literal[
    "missing",
    "is_directory",
    "not_a_directory",
    "binary",
    "exists",
    "not_found",
    "ambiguous",
    "no_change",
    "invalid",
    "denied",
    "not_read",
    "stale",
    "patch_failed",
    "changed",
]


class ToolInputError(Exception):
    """A tool call the model must correct; the message says how.

    Not part of `OiexecError`: it never ends the run, it becomes the tool's (error) result.
    `kind` and the optional details let a harness renderer restate it in upstream words
    (SWE-agent, for instance, lists the line numbers of ambiguous matches).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = "invalid",
        path: Path | None = None,
        count: int | None = None,
        lines: tuple[int, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind
        self.path = path
        self.count = count
        self.lines = lines
