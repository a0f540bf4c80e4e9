"""The manifest adapters: file tools, shells, background tasks, todos and `execute`.

Importing the package registers each implementation with `oiexec.tools.framework`.
"""

from __future__ import annotations

from oiexec.tools.adapters import background, editor, execute, files, patch, shell, todo

__all__ = ["background", "editor", "execute", "files", "patch", "shell", "todo"]
