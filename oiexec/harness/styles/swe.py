"""SWE-agent: its observation and editor wording."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.tools.layout import cat_n, excerpt
from oiexec.tools.results import CommandRun, Result
from oiexec.tools.style import Style

if TYPE_CHECKING:
    from oiexec.core.errors import ToolInputError
    from oiexec.tools.fs import Listing, ReadResult, WriteResult

#: Editor views longer than this are clipped with `CLIPPED`.
CLIP_CHARS = 16_000
CLIPPED = (
    "<response clipped><NOTE>Only part of this output is shown to save context. Search inside "
    "the file with `grep -n` to find the line numbers you need, then view that range.</NOTE>"
)
#: Brackets the diff a final `submit` prints, as SWE-agent's submit command does.
SUBMISSION_MARKER = "<<SWE_AGENT_SUBMISSION>>"


class SweStyle(Style):
    name = "swe"

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        text = run.text
        if run.timed_out and not run.notes:
            text += f"\n{self.timeout_note(timeout_s)}"
        return Result(text, run.failed)

    # --- files -------------------------------------------------------------------------------

    def read(self, result: ReadResult) -> str:
        """`str_replace_editor view` on a file."""
        numbered = cat_n(result.lines, result.start_line)
        return clip(f"Here's the result of running `cat -n` on {result.path}:\n{numbered}\n")

    def listed(self, listing: Listing) -> str:
        """`str_replace_editor view` on a directory (hidden items excluded)."""
        paths = [str(listing.root)] + [str(e.path) for e in listing.entries]
        return (
            f"Files and directories up to 2 levels deep in {listing.root}, hidden items "
            "left out:\n" + "\n".join(sorted(paths)) + "\n"
        )

    def written(self, result: WriteResult, *, appended: bool = False) -> str:
        if result.created:
            return f"File created successfully at: {result.path}"
        return super().written(result, appended=appended)

    def edit_failed(self, error: ToolInputError, *, old: str) -> str:
        if error.kind == "not_found":
            return (
                f"No replacement was performed: old_str `{old}` does not occur exactly as "
                f"written anywhere in {error.path}."
            )
        if error.kind == "ambiguous":
            return (
                f"No replacement was performed: old_str `{old}` matches more than once, in "
                f"lines {list(error.lines)}. Give an old_str that matches in only one place."
            )
        return error.message

    def edited_region(self, path: Path, after: str, first: int, last: int) -> str:
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a "
            f"snippet of {path}:\n{excerpt(after, first, last)}\nCheck that the lines above "
            "say what you meant; if not, edit the file once more."
        )

    def submit_review(self, diff: str) -> str:
        """`review_on_submit`: the first submit shows the diff and a checklist."""
        return (
            "Before you submit, review your work:\n"
            "1. If you wrote scripts to reproduce the issue, remove them unless the task asks "
            "for them.\n"
            "2. If you changed test files that the task did not ask you to change, revert "
            "them.\n"
            "3. Run the reproduction again and make sure the fix works.\n"
            "Then run `submit` again to confirm. Here is the diff of your changes:\n\n"
            f"<diff>\n{diff}\n</diff>"
        )

    def submission(self, diff: str) -> str:
        return f"{SUBMISSION_MARKER}\n{diff}\n{SUBMISSION_MARKER}"


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """`text` cut to `limit` characters with SWE-agent's clipped-response note."""
    return text if len(text) <= limit else text[:limit] + CLIPPED


def swe_observation(text: str) -> str:
    """A command's output as the observation of SWE-agent's text actions."""
    if not text.strip():
        return "The command finished without errors and printed nothing."
    return f"OBSERVATION:\n{text}"
