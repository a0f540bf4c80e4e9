"""Shared file tools every emulated harness maps onto: pure functions returning typed results.

Harness manifests adapt argument names onto these functions; a `Style` (`oiexec.tools.style`)
words the results. Bad input raises `oiexec.core.errors.ToolInputError`, whose message is meant
for the model.
"""

from __future__ import annotations

from oiexec.tools.fs.glob import GlobResult, glob_files
from oiexec.tools.fs.grep import GrepQuery, GrepResult, grep
from oiexec.tools.fs.line_edit import LineEditResult, edit_lines, insert_lines
from oiexec.tools.fs.listing import Listing, list_directory
from oiexec.tools.fs.read import ReadResult, read_window
from oiexec.tools.fs.replace import Edit, ReplaceResult, replace_in_file
from oiexec.tools.fs.state import FileStateTracker, ReadGate
from oiexec.tools.fs.todo import TodoItem, TodoList
from oiexec.tools.fs.write import WriteResult, write_file

__all__ = [
    "Edit",
    "FileStateTracker",
    "GlobResult",
    "GrepQuery",
    "GrepResult",
    "LineEditResult",
    "Listing",
    "ReadGate",
    "ReadResult",
    "ReplaceResult",
    "TodoItem",
    "TodoList",
    "WriteResult",
    "edit_lines",
    "glob_files",
    "grep",
    "insert_lines",
    "list_directory",
    "read_window",
    "replace_in_file",
    "write_file",
]
