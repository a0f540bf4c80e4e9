"""The words of context compaction: the request that asks the model to summarise the
conversation so far, and the heading the summary gets when it replaces the older turns.

These are product text, so they live with the harnesses: a harness folder may ship its own
`compact.md` (the request) and `compact_heading.md` (the heading), found like its other
prompt files (its own folder, then the one it extends); the defaults below are this project's
own wording.
"""

from __future__ import annotations

from oiexec.core.errors import ConfigError
from oiexec.harness.data import read_harness_file

__all__ = ["DEFAULT_HEADING", "DEFAULT_INSTRUCTION", "compaction_prompts"]

DEFAULT_INSTRUCTION = """\
Pause the task and write a handoff note instead of your next step. The earlier part of this \
conversation is about to be removed to make room in the context window, and your note is all \
that will remain of it for whoever continues the work (you, with no other memory of it).

Write plain text and do not call any tool. Cover:
- the task as the user gave it, with every constraint or preference they stated;
- what has been done: files created or changed (with their paths), commands run and what they \
showed, decisions taken and why;
- what was learned and is still needed: file locations, function names, error messages, test \
results;
- what remains to be done, in order, and the very next step.

Be concise but exact: keep names, paths, numbers and error text as they were."""

DEFAULT_HEADING = (
    "[Summary of the earlier conversation] Older turns were replaced by the handoff note "
    "below to fit the context window. Continue the task from where it stands; your most "
    "recent tool calls and their results follow this note."
)


def compaction_prompts(harness_id: str) -> tuple[str, str]:
    """(request, heading) for `harness_id`: its own files where it has them."""
    return (
        _own(harness_id, "compact.md") or DEFAULT_INSTRUCTION,
        _own(harness_id, "compact_heading.md") or DEFAULT_HEADING,
    )


def _own(harness_id: str, name: str) -> str | None:
    try:
        text = read_harness_file(harness_id, name).strip()
    except ConfigError:
        return None
    return text or None
