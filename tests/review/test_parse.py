from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.review.parse import (
    ReviewParseError,
    correction_message,
    fallback_review,
    parse_review,
)
from tests.review.conftest import wire_dict


def answer(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "findings": [
            {
                "title": "[P1] Division by zero on empty input",
                "body": "`mean([])` divides by `len(xs)`, which is 0.",
                "confidence_score": 0.87,
                "priority": 1,
                "code_location": {
                    "absolute_file_path": "/work/repo/stats.py",
                    "line_range": {"start": 12, "end": 14},
                },
            }
        ],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "Empty input now crashes.",
        "overall_confidence_score": 0.8,
    }
    data.update(overrides)
    return data


def finding_with(**overrides: Any) -> dict[str, Any]:
    item = dict(answer()["findings"][0])
    item.update(overrides)
    return answer(findings=[item])


def test_plain_json_is_parsed_field_for_field() -> None:
    result = parse_review(json.dumps(answer()))
    assert result.overall_correctness == "patch is incorrect"
    assert result.overall_confidence_score == 0.8
    [f] = result.findings
    assert f.title == "[P1] Division by zero on empty input"
    assert f.priority == 1
    assert f.confidence_score == 0.87
    assert f.code_location.absolute_file_path == "/work/repo/stats.py"
    assert (f.code_location.line_range.start, f.code_location.line_range.end) == (12, 14)
    assert f.location_status == "unchecked"


def test_fenced_json_is_parsed() -> None:
    text = "```json\n" + json.dumps(answer(), indent=2) + "\n```"
    assert parse_review(text).findings[0].priority == 1


def test_json_wrapped_in_prose_and_fence_is_parsed() -> None:
    text = "Here is my review.\n\n```\n" + json.dumps(answer()) + "\n```\nLet me know!"
    assert parse_review(text).overall_explanation == "Empty input now crashes."


def test_json_after_prose_without_fence_is_parsed() -> None:
    text = "I looked at {the diff}. Result: " + json.dumps(answer()) + " Thanks."
    assert parse_review(text).findings[0].confidence_score == 0.87


def test_fenced_answer_whose_body_contains_a_fence() -> None:
    body = "Use this instead:\n```python\nif not xs:\n    return 0.0\n```"
    text = "```json\n" + json.dumps(finding_with(body=body), indent=2) + "\n```"
    assert parse_review(text).findings[0].body == body


def test_review_object_is_preferred_over_other_embedded_objects() -> None:
    text = 'Config was {"x": 1}. ' + json.dumps(answer())
    assert len(parse_review(text).findings) == 1


def test_no_findings_is_a_clean_review() -> None:
    result = parse_review(json.dumps(answer(findings=[], overall_correctness="patch is correct")))
    assert result.findings == []
    assert result.overall_correctness == "patch is correct"
    assert not result.is_fallback


@pytest.mark.parametrize(
    ("raw", "expected"), [("P1", 1), ("p0", 0), ("[P2]", 2), ("3", 3), (2.0, 2), (None, None)]
)
def test_priority_forms_are_normalised(raw: Any, expected: int | None) -> None:
    result = parse_review(json.dumps(finding_with(priority=raw, title="Plain title")))
    assert result.findings[0].priority == expected


def test_missing_priority_is_taken_from_the_title_tag() -> None:
    item = dict(answer()["findings"][0])
    del item["priority"]
    item["title"] = "[P0] Deletes the user's data"
    assert parse_review(json.dumps(answer(findings=[item]))).findings[0].priority == 0


@pytest.mark.parametrize(
    ("raw", "expected"), [(85, 0.85), ("85%", 0.85), ("0.4", 0.4), (1, 1.0), (0, 0.0)]
)
def test_confidence_forms_are_normalised(raw: Any, expected: float) -> None:
    result = parse_review(json.dumps(finding_with(confidence_score=raw)))
    assert result.findings[0].confidence_score == pytest.approx(expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (7, (7, 7)),
        ("7", (7, 7)),
        ("7-9", (7, 9)),
        ([7, 9], (7, 9)),
        ({"start": 7}, (7, 7)),
        ({"start": "9", "end": "7"}, (7, 9)),
    ],
)
def test_line_range_forms_are_normalised(raw: Any, expected: tuple[int, int]) -> None:
    location = {"absolute_file_path": "/r/x.py", "line_range": raw}
    span = parse_review(json.dumps(finding_with(code_location=location))).findings[0]
    rng = span.code_location.line_range
    assert (rng.start, rng.end) == expected


def test_long_title_is_shortened_to_80_characters() -> None:
    result = parse_review(json.dumps(finding_with(title="x" * 200)))
    assert len(result.findings[0].title) == 80
    assert result.findings[0].title.endswith("…")


def test_verdict_variants_are_normalised() -> None:
    assert parse_review(
        json.dumps(answer(overall_correctness="Incorrect"))
    ).overall_correctness == ("patch is incorrect")
    assert parse_review(json.dumps(answer(overall_correctness=True))).overall_correctness == (
        "patch is correct"
    )


def test_every_problem_is_listed_with_its_path() -> None:
    bad = finding_with(priority="urgent", confidence_score="high")
    del bad["overall_explanation"]
    bad["overall_correctness"] = "looks fine"
    with pytest.raises(ReviewParseError) as info:
        parse_review(json.dumps(bad))
    problems = "\n".join(info.value.problems)
    assert "findings[0].priority" in problems and "'urgent'" in problems
    assert "findings[0].confidence_score" in problems and "'high'" in problems
    assert "overall_explanation` is missing" in problems
    assert "overall_correctness" in problems and "looks fine" in problems
    assert len(info.value.problems) == 4


def test_partial_finding_reports_missing_fields() -> None:
    text = json.dumps(answer(findings=[{"title": "Leak", "priority": 2}]))
    with pytest.raises(ReviewParseError) as info:
        parse_review(text)
    problems = info.value.problems
    assert "`findings[0].body` is missing" in problems
    assert "`findings[0].confidence_score` is missing" in problems
    assert "`findings[0].code_location` is missing" in problems
    assert info.value.raw == text


def test_truncated_json_is_a_parse_error() -> None:
    text = json.dumps(answer())[:-40]
    with pytest.raises(ReviewParseError, match="malformed"):
        parse_review(text)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(5, "priority"), (True, "priority"), ("P7", "priority")],
)
def test_out_of_range_priority_is_rejected(value: Any, fragment: str) -> None:
    with pytest.raises(ReviewParseError, match=fragment):
        parse_review(json.dumps(finding_with(priority=value)))


def test_confidence_above_a_percentage_is_rejected() -> None:
    with pytest.raises(ReviewParseError, match="confidence_score"):
        parse_review(json.dumps(finding_with(confidence_score=250)))


def test_zero_line_is_rejected() -> None:
    location = {"absolute_file_path": "/r/x.py", "line_range": {"start": 0, "end": 3}}
    with pytest.raises(ReviewParseError, match="line_range"):
        parse_review(json.dumps(finding_with(code_location=location)))


def test_top_level_list_is_rejected() -> None:
    with pytest.raises(ReviewParseError, match="top level"):
        parse_review("[1, 2]")


@pytest.mark.parametrize("text", ["", "   ", "The patch looks fine to me."])
def test_non_json_answer_is_a_parse_error(text: str) -> None:
    with pytest.raises(ReviewParseError):
        parse_review(text)


def test_fallback_keeps_the_raw_text_like_codex() -> None:
    result = fallback_review("The patch looks fine to me.")
    assert wire_dict(result) == {
        "findings": [],
        "overall_correctness": "",
        "overall_explanation": "The patch looks fine to me.",
        "overall_confidence_score": 0.0,
    }
    assert result.is_fallback


def test_correction_message_names_the_problems_and_the_shape() -> None:
    with pytest.raises(ReviewParseError) as info:
        parse_review(json.dumps(finding_with(priority="urgent")))
    message = correction_message(info.value)
    assert "findings[0].priority" in message
    assert "no code fences" in message
    for key in ("overall_correctness", "overall_confidence_score", "line_range", "priority"):
        assert key in message


def test_deeply_nested_json_is_a_parse_error_not_a_crash() -> None:
    with pytest.raises(ReviewParseError):
        parse_review("[" * 100_000 + "]" * 100_000)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises_anything_else(text: str) -> None:
    with contextlib.suppress(ReviewParseError):
        parse_review(text)


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "findings",
                        "priority",
                        "title",
                        "line_range",
                        "code_location",
                        "confidence_score",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_arbitrary_json_never_raises_anything_else(value: Any) -> None:
    with contextlib.suppress(ReviewParseError):
        parse_review(json.dumps(value))
