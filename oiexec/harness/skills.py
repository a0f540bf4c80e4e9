"""How a harness lists the available skills to the model, as its product does."""

from __future__ import annotations

from collections.abc import Sequence

from oiexec.core.types import HistoryItem
from oiexec.extensions.skills import Skill
from oiexec.harness.spec import HarnessSpec

__all__ = ["skills_context"]


def skills_context(spec: HarnessSpec, skills: Sequence[Skill]) -> list[HistoryItem]:
    return []
