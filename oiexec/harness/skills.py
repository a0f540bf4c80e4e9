"""How a harness lists the available skills to the model, as its product does.

The wording is data: a harness folder may hold `skills.md` (the block, `$skills` standing for
the list) and `skill_item.md` (one entry: `$name`, `$description`, `$path`); a harness that
extends another inherits them. A harness that opens with Codex's context (native) sends the
block as a `developer` message, as Codex does; the others send it as a user message before
the task, the place their products put reminders. A harness without its own wording gets a
short neutral block. The listing always gives the SKILL.md path: the model reads the body
with its own file or shell tools when it uses a skill.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from oiexec.core.errors import ConfigError
from oiexec.core.types import HistoryItem, Message
from oiexec.extensions.skills import Skill
from oiexec.harness.spec import HarnessSpec

__all__ = ["render_skills", "skills_context"]

_DEFAULT_BLOCK = (
    "Skills are folders of instructions for particular tasks. Each entry below gives a "
    "skill's name, what it is for, and the path of its SKILL.md. When a task matches a "
    "skill, read that SKILL.md first and follow it; resolve relative paths it mentions "
    "against the skill's folder.\n\n$skills\n"
)
_DEFAULT_ITEM = "- $name: $description (file: $path)"


def skills_context(spec: HarnessSpec, skills: Sequence[Skill]) -> list[HistoryItem]:
    if not skills:
        return []
    role = "developer" if spec.prompt.codex_context else "user"
    return [Message(role=role, text=render_skills(spec.id, skills))]


def render_skills(harness_id: str, skills: Sequence[Skill]) -> str:
    block = _harness_text(harness_id, "skills.md") or _DEFAULT_BLOCK
    item = (_harness_text(harness_id, "skill_item.md") or _DEFAULT_ITEM).strip("\n")
    lines = [
        Template(item).safe_substitute(
            name=skill.name, description=skill.description, path=skill.path.as_posix()
        )
        for skill in skills
    ]
    return Template(block).safe_substitute(skills="\n".join(lines)).strip() + "\n"


def _harness_text(harness_id: str, name: str) -> str | None:
    from oiexec.harness.data import read_harness_file

    try:
        return read_harness_file(harness_id, name)
    except ConfigError:  # the harness has no wording of its own
        return None
