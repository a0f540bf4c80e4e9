"""Skills: `SKILL.md` folders with a name and a description in their front matter, found in
the project (trusted only) and the user's skill directories."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Skill"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    #: The skill's SKILL.md (the model reads it when it uses the skill).
    path: Path
