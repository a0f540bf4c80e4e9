"""Turn the model's review answer into a `ReviewOutput`, tolerantly.

The JSON may come bare, inside a ``` fence, or wrapped in prose. Field values are normalised
when the intent is unambiguous (priority "P1", confidence 85 or "85%", line_range 12 or
"12-14" or [12, 14], a "[P1]" title tag standing in for a missing priority); anything else
becomes a `ReviewParseError` listing every problem with its JSON path, so the caller can send
`correction_message(error)` back to the model once and, if that fails too, fall back to
`fallback_review(raw)` as Codex does.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import ValidationError

from oiexec.core.errors import ModelFacingError
from oiexec.review.model import CORRECT, INCORRECT, TITLE_MAX_CHARS, ReviewOutput

__all__ = [
    "ReviewParseError",
    "correction_message",
    "fallback_review",
    "parse_review",
]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_PRIORITY = re.compile(r"^\[?\s*p?\s*([0-9]+)\s*\]?$", re.IGNORECASE)
_TITLE_TAG = re.compile(r"^\s*\[P([0-3])\]", re.IGNORECASE)
_RANGE = re.compile(r"^\s*L?(\d+)\s*(?:(?:-|–|:|\.\.)\s*L?(\d+))?\s*$")
_REVIEW_KEYS = {"findings", "overall_correctness", "overall_explanation"}
_PATH_KEYS = ("absolute_file_path", "file_path", "path", "file")
#: Bound the prose scan so a huge non-JSON answer cannot make parsing quadratic.
_MAX_DECODE_ATTEMPTS = 200


class ReviewParseError(ModelFacingError):
    """The answer is not a usable review; `problems` lists what is wrong, one per entry. The
    model is asked once to correct it (`correction_message`); it never ends the run."""

    def __init__(self, problems: list[str], raw: str) -> None:
        super().__init__("review answer is not valid: " + "; ".join(problems))
        self.problems = problems
        self.raw = raw


def parse_review(text: str) -> ReviewOutput:
    """Parse and normalise a review answer; raise only `ReviewParseError`."""
    try:
        return _parse(text)
    except ReviewParseError:
        raise
    except Exception as exc:
        # The one broad catch: whatever the model sends, the run must not crash on it.
        reason = f"could not read the answer ({type(exc).__name__})"
        raise ReviewParseError([reason], text) from exc


def fallback_review(raw: str) -> ReviewOutput:
    """Codex's result for an answer that is not JSON at all: the raw text as explanation."""
    return ReviewOutput(
        findings=[],
        overall_correctness="",
        overall_explanation=raw,
        overall_confidence_score=0.0,
    )


def correction_message(error: ReviewParseError) -> str:
    """The one-time follow-up user message asking the model to fix its answer."""
    problems = "\n".join(f"- {p}" for p in error.problems)
    return (
        "Your last answer could not be used as the review result:\n"
        f"{problems}\n\n"
        "Reply again with only the corrected JSON object: no prose before or after it and no "
        "code fences. It must have exactly these keys: `findings` (a list; each item has "
        "`title` (at most 80 characters), `body`, `confidence_score` (a number from 0 to 1), "
        "`priority` (an integer 0-3, or null) and `code_location` with `absolute_file_path` and "
        '`line_range` {`start`, `end`} as integers), `overall_correctness` ("patch is '
        'correct" or "patch is incorrect"), `overall_explanation` (a string) and '
        "`overall_confidence_score` (a number from 0 to 1). Keep the findings you already "
        "reported; only fix the format."
    )


def _parse(text: str) -> ReviewOutput:
    data = _extract_object(text)
    problems: list[str] = []
    normalised = _normalise_review(data, problems)
    if problems:
        raise ReviewParseError(problems, text)
    try:
        return ReviewOutput.model_validate(normalised)
    except ValidationError as exc:
        raise ReviewParseError(_describe(exc), text) from exc


# --- finding the JSON object ------------------------------------------------------------


def _extract_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped:
        raise ReviewParseError(["the answer is empty; expected a JSON object"], text)
    # Whole answer and fenced blocks first: what the model presented as its answer.
    primary = [_loads(stripped)] + [_loads(m.group(1).strip()) for m in _FENCE.finditer(text)]
    primary = [value for value in primary if value is not _NOTHING]
    for value in [*primary, *_embedded_objects(text)]:
        if isinstance(value, dict) and _REVIEW_KEYS & value.keys():
            return value
    for value in primary:
        if isinstance(value, dict):
            return value
    if primary:
        kind = _kind(primary[0])
        raise ReviewParseError([f"expected a JSON object at the top level, got {kind}"], text)
    raise ReviewParseError([_why_no_object(text)], text)


def _why_no_object(text: str) -> str:
    first, last = text.find("{"), text.rfind("}")
    if first == -1:
        return "no JSON object found in the answer"
    try:
        json.loads(text[first : last + 1] if last > first else text[first:])
    except ValueError as exc:
        return f"no complete JSON review object found; the JSON is malformed: {exc}"
    return "no JSON review object found in the answer"


_NOTHING = object()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOTHING


def _embedded_objects(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = text.find("{")
    attempts = 0
    while index != -1 and attempts < _MAX_DECODE_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found


# --- normalising fields -----------------------------------------------------------------


def _normalise_review(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    findings = data.get("findings", _NOTHING)
    if findings is _NOTHING:
        problems.append("`findings` is missing (use [] when there is nothing to report)")
        findings = []
    elif findings is None:
        findings = []
    elif isinstance(findings, dict):
        findings = [findings]
    if not isinstance(findings, list):
        problems.append(f"`findings` must be a list, got {_kind(findings)}")
        findings = []
    out["findings"] = [
        _normalise_finding(item, f"findings[{i}]", problems) for i, item in enumerate(findings)
    ]
    out["overall_correctness"] = _verdict(data.get("overall_correctness", _NOTHING), problems)
    explanation = data.get("overall_explanation", _NOTHING)
    if explanation is _NOTHING:
        problems.append("`overall_explanation` is missing")
    elif not isinstance(explanation, str):
        problems.append(f"`overall_explanation` must be a string, got {_kind(explanation)}")
    out["overall_explanation"] = explanation if isinstance(explanation, str) else ""
    out["overall_confidence_score"] = _confidence(
        data.get("overall_confidence_score", _NOTHING), "overall_confidence_score", problems
    )
    return out


def _normalise_finding(item: Any, where: str, problems: list[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        problems.append(f"`{where}` must be an object, got {_kind(item)}")
        return {}
    title = _string(item.get("title", _NOTHING), f"{where}.title", problems, required=True)
    if title and len(title) > TITLE_MAX_CHARS:
        title = title[: TITLE_MAX_CHARS - 1].rstrip() + "…"
    body = _string(item.get("body", _NOTHING), f"{where}.body", problems, required=True)
    priority = _priority(item.get("priority"), f"{where}.priority", problems)
    tag = _TITLE_TAG.match(title)
    if priority is None and tag:
        priority = int(tag.group(1))
    return {
        "title": title,
        "body": body,
        "confidence_score": _confidence(
            item.get("confidence_score", _NOTHING), f"{where}.confidence_score", problems
        ),
        "priority": priority,
        "code_location": _location(item.get("code_location", _NOTHING), where, problems),
    }


def _string(value: Any, where: str, problems: list[str], *, required: bool) -> str:
    if value is _NOTHING or value is None:
        if required:
            problems.append(f"`{where}` is missing")
        return ""
    if not isinstance(value, str):
        problems.append(f"`{where}` must be a string, got {_kind(value)}")
        return ""
    if required and not value.strip():
        problems.append(f"`{where}` is empty")
    return value.strip()


def _priority(value: Any, where: str, problems: list[str]) -> int | None:
    if value is None:
        return None
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        match = _PRIORITY.match(value.strip())
        number = int(match.group(1)) if match else None
    if number is None or not 0 <= number <= 3:
        problems.append(f"`{where}` must be an integer from 0 to 3 (or null), got {value!r}")
        return None
    return number


def _confidence(value: Any, where: str, problems: list[str]) -> float:
    if value is _NOTHING or value is None:
        problems.append(f"`{where}` is missing")
        return 0.0
    number = _number(value)
    if number is not None and 1.0 < number <= 100.0:
        number /= 100.0  # a percentage: 85 means 0.85
    if number is None or not 0.0 <= number <= 1.0:
        problems.append(f"`{where}` must be a number from 0 to 1, got {value!r}")
        return 0.0
    return number


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return None
        if percent:
            number /= 100.0
    else:
        return None
    return number if math.isfinite(number) else None


def _verdict(value: Any, problems: list[str]) -> str:
    if value is _NOTHING:
        problems.append("`overall_correctness` is missing")
        return ""
    if isinstance(value, bool):
        return CORRECT if value else INCORRECT
    if isinstance(value, str):
        text = " ".join(value.lower().replace("_", " ").split())
        if text in {CORRECT, "correct"}:
            return CORRECT
        if text in {INCORRECT, "incorrect"}:
            return INCORRECT
    problems.append(f'`overall_correctness` must be "{CORRECT}" or "{INCORRECT}", got {value!r}')
    return ""


def _location(value: Any, where: str, problems: list[str]) -> dict[str, Any]:
    where = f"{where}.code_location"
    if not isinstance(value, dict):
        problems.append(
            f"`{where}` is missing" if value is _NOTHING else f"`{where}` must be an object"
        )
        return {}
    path = next((value[k] for k in _PATH_KEYS if isinstance(value.get(k), str)), None)
    if not path or not path.strip():
        problems.append(f"`{where}.absolute_file_path` is missing")
        path = ""
    return {
        "absolute_file_path": path.strip(),
        "line_range": _line_range(value.get("line_range", _NOTHING), where, problems),
    }


def _line_range(value: Any, where: str, problems: list[str]) -> dict[str, int]:
    where = f"{where}.line_range"
    bounds = _bounds(value)
    if bounds is None:
        problems.append(
            f"`{where}` is missing"
            if value is _NOTHING
            else f"`{where}` must be {{start, end}} with integer lines from 1, got {value!r}"
        )
        return {"start": 1, "end": 1}
    start, end = sorted(bounds)
    if start < 1:
        problems.append(f"`{where}` lines start at 1, got {value!r}")
        return {"start": 1, "end": 1}
    return {"start": start, "end": end}


def _bounds(value: Any) -> tuple[int, int] | None:
    if isinstance(value, dict):
        start = _line(value.get("start"))
        end = _line(value.get("end")) if value.get("end") is not None else start
        return (start, end) if start is not None and end is not None else None
    if isinstance(value, list) and 1 <= len(value) <= 2:
        lines = [_line(v) for v in value]
        if all(v is not None for v in lines):
            return (lines[0], lines[-1])  # type: ignore[return-value]
        return None
    if isinstance(value, str):
        match = _RANGE.match(value)
        if match:
            first = int(match.group(1))
            return (first, int(match.group(2) or first))
        return None
    line = _line(value)
    return (line, line) if line is not None else None


def _line(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _describe(exc: ValidationError) -> list[str]:
    return [
        f"`{'.'.join(str(p) for p in err['loc']) or 'answer'}`: {err['msg']}"
        for err in exc.errors()
    ]
