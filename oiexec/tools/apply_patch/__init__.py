"""The patch engine: Codex's `*** Begin Patch` patches and unified diffs, applied all or
nothing through the sandbox's writer.

The flow, whichever grammar the patch is in:

1. parse: `codex.parse_patch` or `unified.parse_unified_diff` turn the text into one change
   model (`model`: a `Patch` of `AddFile` / `DeleteFile` / `UpdateFile` sections, updates
   made of `Chunk`s); `heredoc` recognises `apply_patch <<'EOF'` shell commands first.
2. plan: `plan.Plan` clears every path with the writer (the sandbox policy), reads each file
   and applies its chunks (`text.patch_text`), each placed by the one matcher (`match`) under
   the grammar's `Rules`; a chunk with no place raises `ApplyPatchError` worded by the grammar.
3. commit: `FileWriter.commit` (oiexec.sandbox.writer) writes every file through a temp file
   renamed over it, without following symlinks, and puts the written ones back if one fails.
4. summary: a `PatchResult` of `FileChange`s, with Codex's `Success. Updated ...` text.
"""

from __future__ import annotations

from oiexec.tools.apply_patch.codex import (
    apply_parsed_patch,
    apply_patch,
    parse_patch,
    render_patch,
)
from oiexec.tools.apply_patch.heredoc import (
    HeredocInvocation,
    extract_heredoc_patch,
    parse_heredoc_invocation,
)
from oiexec.tools.apply_patch.match import HunkReport
from oiexec.tools.apply_patch.model import (
    AddFile,
    ApplyPatchError,
    ChangeKind,
    Chunk,
    DeleteFile,
    FileChange,
    Hunk,
    Patch,
    PatchResult,
    UpdateFile,
)
from oiexec.tools.apply_patch.plan import plan_changes
from oiexec.tools.apply_patch.unified import apply_hunks, apply_unified_diff, parse_unified_diff

__all__ = [
    "AddFile",
    "ApplyPatchError",
    "ChangeKind",
    "Chunk",
    "DeleteFile",
    "FileChange",
    "HeredocInvocation",
    "Hunk",
    "HunkReport",
    "Patch",
    "PatchResult",
    "UpdateFile",
    "apply_hunks",
    "apply_parsed_patch",
    "apply_patch",
    "apply_unified_diff",
    "extract_heredoc_patch",
    "parse_heredoc_invocation",
    "parse_patch",
    "parse_unified_diff",
    "plan_changes",
    "render_patch",
]
