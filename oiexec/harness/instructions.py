"""What the user tells the model besides the task, and where each harness puts it.

Two inputs, resolved by the runner (runner/instructions.py) and handed to every harness:

- `base`: replaces the harness's own prompt template (Codex's `model_instructions_file`). The
  harness's guidance block, where it has one, is still put before it (`harness_guidance`).
- `developer`: added after the harness's prompt (Codex's `developer_instructions`, Claude
  Code's `--append-system-prompt`), where the emulated product puts such text
  (`[prompt] developer_text` in the manifest):

  - `message` (native, as Codex does): a `developer` message right after the base
    instructions and before everything else of the context. The Responses wire sends it as
    a `developer` input item after the one carrying the base instructions; Chat Completions
    as a second `system` message.
  - `system` (every other harness, as Claude Code and the chat agents do): appended to the
    system prompt after a blank line, so the request keeps the one system prompt the
    product sends (one `system` message, the Messages wire's `system` blocks).

Placement happens when each request is shaped (`place_developer_text`), never in the
history: nothing of it is recorded in the session, so a resumed run gets the text its own
config and flags give now, and a compaction keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oiexec.core.types import Message, ModelRequest

__all__ = ["DeveloperPlacement", "Instructions", "place_developer_text"]

DeveloperPlacement = Literal["message", "system"]


@dataclass(frozen=True)
class Instructions:
    """The user's instructions for one run; None where the user gave none."""

    #: Replaces the harness's prompt template (used verbatim: no `$variables` are filled).
    base: str | None = None
    #: Added after the harness's prompt (or after the review rubric that replaces it).
    developer: str | None = None


def place_developer_text(
    request: ModelRequest, text: str | None, placement: DeveloperPlacement
) -> ModelRequest:
    """`request` with `text` where the harness's product puts developer text."""
    if not text:
        return request
    if placement == "message":
        history = (Message(role="developer", text=text), *request.history)
        return request.model_copy(update={"history": history})
    base = request.instructions.rstrip()
    combined = f"{base}\n\n{text}" if base else text
    return request.model_copy(update={"instructions": combined})
