"""The structured review result, field for field as Codex's review mode produces it.

The model answers with `ReviewOutput` (findings plus an overall verdict). We add derived fields
the model never sets (`location_status`, `relative_path`) once `locate.locate_findings` has
checked each location against the repository and the change.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CORRECT",
    "INCORRECT",
    "TITLE_MAX_CHARS",
    "BaselineState",
    "CodeLocation",
    "LineRange",
    "LocationStatus",
    "ReviewFinding",
    "ReviewOutput",
    "review_output_json_schema",
]

TITLE_MAX_CHARS = 80
CORRECT = "patch is correct"
INCORRECT = "patch is incorrect"

#: Where a finding points, once checked:
#: `in_diff` — at least one of its lines was touched by the change;
#: `outside_diff` — the lines exist but the change did not touch them;
#: `file_missing` — no such file in the repository (or the path leaves it);
#: `line_out_of_range` — the file exists but is shorter than the range;
#: `in_file` — the lines exist and there is no diff to compare with (custom instructions);
#: `unchecked` — `locate_findings` has not run.
LocationStatus = Literal[
    "in_diff", "outside_diff", "file_missing", "line_out_of_range", "in_file", "unchecked"
]

#: Where a finding stands against `review --baseline` (SARIF's `baselineState` values; a
#: baseline result that no finding matches is `absent`, which only the SARIF report lists).
BaselineState = Literal["new", "unchanged"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LineRange(_Model):
    """Inclusive, 1-based line range on the new side of the change."""

    start: int = Field(ge=1)
    end: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> LineRange:
        if self.end < self.start:
            raise ValueError("line_range.end must be >= line_range.start")
        return self


class CodeLocation(_Model):
    absolute_file_path: str = Field(min_length=1)
    line_range: LineRange


class ReviewFinding(_Model):
    """One review comment; `priority` 0 is the most severe."""

    title: str = Field(min_length=1, max_length=TITLE_MAX_CHARS)
    body: str
    confidence_score: float = Field(ge=0.0, le=1.0)
    priority: int | None = Field(default=None, ge=0, le=3)
    code_location: CodeLocation
    #: Derived by `locate_findings`, never asked of the model.
    location_status: LocationStatus = "unchecked"
    #: Path relative to the repository root (POSIX separators) when it points inside the repo.
    relative_path: str | None = None
    #: Derived by `locate_findings`: identity.fingerprint with the flagged code lines.
    fingerprint: str | None = None
    #: Derived from `review --baseline`: `new`, or `unchanged` when the baseline has it
    #: (None: no baseline given).
    baseline_state: BaselineState | None = None

    @property
    def display_path(self) -> str:
        return self.relative_path or self.code_location.absolute_file_path


class ReviewOutput(_Model):
    findings: list[ReviewFinding] = Field(default_factory=list)
    #: "patch is correct", "patch is incorrect", or "" when the answer could not be parsed.
    overall_correctness: Literal["patch is correct", "patch is incorrect", ""]
    overall_explanation: str
    overall_confidence_score: float = Field(ge=0.0, le=1.0)

    def shown_findings(self, show_unchanged: bool = False) -> list[ReviewFinding]:
        """The findings a report lists: those already in the baseline only when asked."""
        if show_unchanged:
            return list(self.findings)
        return [f for f in self.findings if f.baseline_state != "unchanged"]

    @property
    def is_fallback(self) -> bool:
        """True for the placeholder built from an answer that was not a review at all."""
        return self.overall_correctness == "" and not self.findings


def review_output_json_schema() -> dict[str, Any]:
    """The JSON Schema we send on wires with structured output (strict-mode compatible).

    Written by hand rather than derived from the models: strict structured output requires
    every property listed in `required` (optional ones become nullable) and no derived fields.
    """
    line_range = _object(
        {"start": {"type": "integer", "minimum": 1}, "end": {"type": "integer", "minimum": 1}}
    )
    location = _object(
        {
            "absolute_file_path": {"type": "string", "description": "Absolute path of the file."},
            "line_range": line_range,
        }
    )
    finding = _object(
        {
            "title": {"type": "string", "description": "At most 80 characters."},
            "body": {"type": "string", "description": "Markdown explanation of the problem."},
            "confidence_score": {"type": "number", "minimum": 0, "maximum": 1},
            "priority": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": 3,
                "description": "0 = must fix before merge (P0) … 3 = minor (P3).",
            },
            "code_location": location,
        }
    )
    return _object(
        {
            "findings": {"type": "array", "items": finding},
            "overall_correctness": {"type": "string", "enum": [CORRECT, INCORRECT]},
            "overall_explanation": {"type": "string"},
            "overall_confidence_score": {"type": "number", "minimum": 0, "maximum": 1},
        }
    )


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
