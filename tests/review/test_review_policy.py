"""The review's final-answer policy on its own: parse, one correction, fallback, locations,
and what it emits."""

from __future__ import annotations

import json
from pathlib import Path

from oiexec.agent.final import Retry
from oiexec.core.context import ItemEmitter
from oiexec.core.events import AgentMessageItem, ItemCompleted, ReviewItem, ThreadEvent
from oiexec.review.targets import UncommittedTarget, changed_lines, resolve_target
from oiexec.runner.review import ReviewAnswer
from tests.review.conftest import finding, review, wire_dict


def policy(repo: Path) -> ReviewAnswer:
    resolved = resolve_target(repo, UncommittedTarget())
    return ReviewAnswer(resolved, changed_lines(repo, UncommittedTarget()), warn=lambda _m: None)


def emitted(answer: ReviewAnswer, text: str) -> list[ThreadEvent]:
    events: list[ThreadEvent] = []
    answer.present(text, ItemEmitter(events.append))
    return events


def test_valid_answer_is_located_and_presented_as_review_then_text(git_repo: Path) -> None:
    (git_repo / "a.txt").write_text("changed\n" + "".join(f"line {n}\n" for n in range(2, 11)))
    answer = policy(git_repo)
    text = review(finding(str(git_repo / "a.txt"), 1), finding(str(git_repo / "b.txt"), 2))
    accepted = answer.accept(json.dumps(wire_dict(text)), 1)
    assert isinstance(accepted, str) and accepted.startswith("The change breaks iteration.")
    assert answer.review is not None and not answer.fell_back
    assert [f.location_status for f in answer.review.findings] == ["in_diff", "outside_diff"]

    events = emitted(answer, accepted)
    items = [e.item for e in events if isinstance(e, ItemCompleted)]
    assert isinstance(items[0], ReviewItem) and isinstance(items[1], AgentMessageItem)
    assert items[0].review["findings"][0]["relative_path"] == "a.txt"
    assert items[1].text == accepted
    assert [i.id for i in items] == ["item_0", "item_1"]


def test_one_correction_then_fallback(git_repo: Path) -> None:
    answer = policy(git_repo)
    first = answer.accept("not json", 1)
    assert isinstance(first, Retry) and "no JSON object found" in first.message
    assert answer.review is None
    second = answer.accept("still not json", 2)
    assert second == "still not json"
    assert answer.fell_back and answer.review is not None and answer.review.is_fallback


def test_empty_fallback_renders_the_codex_placeholder(git_repo: Path) -> None:
    answer = policy(git_repo)
    answer.accept("", 1)
    assert answer.accept("   ", 2) == "Reviewer failed to output a response."
