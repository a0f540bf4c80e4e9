"""Manifest tools: model-facing names and schemas over the shared implementations.

Importing the package registers every implementation in `IMPLS`.
"""

from __future__ import annotations

from oiexec.tools.adapters import background, editor, execute, files, patch, shell, todo
from oiexec.tools.adapters.base import IMPLS, Invocation, ManifestTool, Result, Runtime

__all__ = [
    "IMPLS",
    "Invocation",
    "ManifestTool",
    "Result",
    "Runtime",
    "background",
    "editor",
    "execute",
    "files",
    "patch",
    "shell",
    "todo",
]
