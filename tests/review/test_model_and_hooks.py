from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from oiexec.review.model import review_output_json_schema
from oiexec.review.parse import parse_review
from oiexec.review.prompt import review_instructions
from tests.review.conftest import finding, review, wire_dict

REPO = Path(__file__).resolve().parents[2]

GOOD = {
    "findings": [
        {
            "title": "[P2] Retry loop never sleeps",
            "body": "Spins the CPU.",
            "confidence_score": 0.7,
            "priority": 2,
            "code_location": {
                "absolute_file_path": "/r/net.py",
                "line_range": {"start": 4, "end": 9},
            },
        }
    ],
    "overall_correctness": "patch is incorrect",
    "overall_explanation": "One robustness gap.",
    "overall_confidence_score": 0.6,
}


def objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = [schema] if schema.get("type") == "object" else []
    for child in schema.get("properties", {}).values():
        found += objects(child)
    if isinstance(schema.get("items"), dict):
        found += objects(schema["items"])
    return found


def test_wire_schema_accepts_a_codex_shaped_answer_and_round_trips() -> None:
    schema = review_output_json_schema()
    jsonschema.Draft202012Validator(schema).validate(GOOD)
    assert wire_dict(parse_review(json.dumps(GOOD))) == GOOD


def test_wire_schema_is_strict_mode_shaped() -> None:
    # Structured-output strict mode: every object closed and every property required.
    for node in objects(review_output_json_schema()):
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d.update(overall_correctness="fine"),
        lambda d: d["findings"][0].update(priority=4),
        lambda d: d["findings"][0]["code_location"].pop("line_range"),
    ],
)
def test_wire_schema_rejects_wrong_answers(mutate: Any) -> None:
    data = json.loads(json.dumps(GOOD))
    mutate(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(review_output_json_schema()).validate(data)


def test_wire_dict_leaves_out_derived_fields() -> None:
    located = review(finding(location_status="in_diff", relative_path="a.txt"))
    item = wire_dict(located)["findings"][0]
    assert set(item) == {"title", "body", "confidence_score", "priority", "code_location"}
    assert located.model_dump()["findings"][0]["location_status"] == "in_diff"


def test_prompt_names_the_shape_and_the_root() -> None:
    text = review_instructions("/work/repo")
    for key in (
        "overall_correctness",
        "overall_confidence_score",
        "absolute_file_path",
        "line_range",
        "no code fences",
    ):
        assert key in text
    assert text.rstrip().endswith("The repository root is /work/repo.")


def test_pre_commit_hooks_file() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"oiexec-review", "oiexec-review-push"}
    commit, push = hooks["oiexec-review"], hooks["oiexec-review-push"]
    assert commit["entry"] == "interpreter review --uncommitted"
    assert commit["stages"] == ["pre-commit"] and push["stages"] == ["pre-push"]
    assert push["entry"].split()[:2] == ["interpreter", "review"]
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False and hook["always_run"] is True
