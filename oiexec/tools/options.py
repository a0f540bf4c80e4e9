"""The options model of each tool implementation: what a `[[tools]]` entry of a harness
manifest may set in `options` and `limits`, with the defaults an entry that sets nothing gets.

Models forbid unknown keys and are strict (no "yes" for a boolean, no "30" for a number), so a
misspelt or mistyped option fails when the harness loads instead of being silently ignored.
`oiexec.tools.table` names each implementation's model; implementations read theirs with
`Invocation.opts(Model)`. This module imports only pydantic: it is loaded when a manifest sets
options, before any tool code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "EditorOptions",
    "ExecuteOptions",
    "FsReadOptions",
    "FsReplaceOptions",
    "FsWriteOptions",
    "GlobOptions",
    "GlobSort",
    "GrepMode",
    "GrepOptions",
    "ListOptions",
    "ShellOptions",
    "SubmitOptions",
    "TaskOutputOptions",
    "TodoOptions",
    "TodoWriteOptions",
    "ToolOptions",
]

#: Orders of `glob`'s hits (tools/fs/glob.py).
GlobSort = Literal["mtime_desc", "mtime_asc", "path", "recent_first"]
#: What `grep` shows when the model names no `output_mode` (the model-facing names).
GrepMode = Literal["content", "files_with_matches", "count_matches"]
TimeUnit = Literal["s", "ms"]


class ToolOptions(BaseModel):
    """No options: the model of every implementation that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ShellOptions(ToolOptions):
    """`shell`: one command in a fresh (or the run's persistent) shell."""

    #: What the model's `timeout` argument counts in.
    timeout_unit: TimeUnit = "s"
    default_timeout_s: float = 120
    max_timeout_s: float = 600
    #: Output beyond this is cut, in the product's wording.
    max_output_chars: int = 30_000
    #: Output of this many lines or more counts as long too (0 or unset: no line rule).
    max_output_lines: int | None = None
    #: Long output is also saved to a file the result names.
    save_long_output: bool = False
    #: The shell as the product starts it (unset: the run's shell).
    shell: str | None = None
    #: Start `shell` by the full path PATH gives (opencode's error messages show it).
    shell_resolved: bool = False
    #: Run in the run's one persistent shell (SWE-agent).
    persistent: bool = False
    #: A first output line equal to this ends the run with the rest as the submission.
    submit_marker: str | None = None
    #: `run_in_background` needs a `description` (Kimi).
    background_requires_description: bool = False
    #: Prefix of background task ids.
    task_prefix: str = "bg_"


class TaskOutputOptions(ToolOptions):
    """`task_output`: a background task's status and output, waiting for it if asked."""

    timeout_unit: TimeUnit = "ms"
    #: The wait when the model gives no `timeout`, in `timeout_unit`.
    default_timeout: int = 30_000
    max_wait_s: float = 600
    max_output_chars: int = 30_000


class FsReadOptions(ToolOptions):
    """`fs_read`: a window of a text file."""

    #: Say "unchanged since last read" instead of the same window again (Claude Code).
    unchanged_note: bool = False
    #: Whether the model's `offset` counts lines from 0 or 1.
    offset_base: Literal[0, 1] = 1
    default_limit: int = 2000
    max_lines: int | None = None
    max_line_chars: int | None = 2000
    #: Appended to a line cut at `max_line_chars`.
    line_cut_suffix: str = ""
    max_bytes: int | None = None
    max_file_bytes: int | None = None
    max_tail: int | None = None


class FsWriteOptions(ToolOptions):
    """`fs_write`: a whole file."""

    #: Refuse to overwrite a file the run has not read (or that changed since).
    require_read: bool = False
    #: The refusal is an error result (else a plain one: Claude Code without tools' errors).
    gate_is_error: bool = True


class FsReplaceOptions(FsWriteOptions):
    """`fs_replace`: exact string replacement."""

    #: An empty `old` string on a missing file creates it (Claude Code, Qwen Code).
    create_if_empty_old: bool = False


class GlobOptions(ToolOptions):
    """`glob`: paths matching a pattern."""

    #: The pattern is a substring of the name (DeepSeek's file search).
    substring: bool = False
    #: Hits when the model gives no `limit` (0: no cut).
    max_results: int = 100
    sort: GlobSort = "mtime_desc"
    #: Whether `*.py` matches in subfolders too (ripgrep's globs) or only at the root.
    basename_anywhere: bool = True
    #: Whether directories are hits too when the model's `include_dirs` does not say.
    include_dirs: bool = False


class GrepOptions(ToolOptions):
    """`grep`: a regex search over files."""

    default_output_mode: GrepMode = "files_with_matches"
    #: Whether the search ignores case when the model's `case_insensitive` does not say.
    ignore_case: bool = False
    #: Results when the model gives no `head_limit` (unset or 0: all).
    head_limit: int | None = None


class ListOptions(ToolOptions):
    """`list`: a directory tree."""

    depth: int = 1


class TodoOptions(ToolOptions):
    """`plan_write`: the whole list as `plan[{step, status}]`."""

    #: The item field that holds a todo's text.
    content_field: str = "content"


class TodoWriteOptions(TodoOptions):
    """`todo_write`: the whole list as `todos[]`."""

    #: A call without `todos` reads the list back (Kimi) instead of failing.
    omit_reads: bool = False


class EditorOptions(ToolOptions):
    """`str_replace_editor`: SWE-agent's editor."""

    #: The arguments a text action gives by position (read by the harness's action parser).
    positional: list[str] = []


class SubmitOptions(ToolOptions):
    """`submit`: end the run with the working tree's diff."""

    #: The first submit shows the diff for review; the second submits (SWE-agent).
    confirm_twice: bool = False


class ExecuteOptions(ToolOptions):
    """`execute`: code in the run's persistent interpreters."""

    #: Seconds one call may run (the interpreters' default).
    timeout_s: float = 120.0
