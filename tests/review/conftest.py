"""Helpers for review tests: real git repositories and review results built field by field."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from oiexec.review.model import ReviewFinding, ReviewOutput


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def numbered(count: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {n}\n" for n in range(1, count + 1))


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A repo on `main` with one commit: a.txt (10 lines), b.txt (5 lines)."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text(numbered(10))
    (path / "b.txt").write_text(numbered(5, "bee"))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def finding(
    path: str = "/repo/a.txt",
    start: int = 1,
    end: int | None = None,
    *,
    priority: int | None = 1,
    confidence: float = 0.9,
    title: str = "Off-by-one in the loop bound",
    body: str = "The loop stops one element early.",
    **derived: Any,
) -> ReviewFinding:
    return ReviewFinding.model_validate(
        {
            "title": title,
            "body": body,
            "confidence_score": confidence,
            "priority": priority,
            "code_location": {
                "absolute_file_path": path,
                "line_range": {"start": start, "end": end if end is not None else start},
            },
            **derived,
        }
    )


def review(*findings: ReviewFinding, correctness: str = "patch is incorrect") -> ReviewOutput:
    return ReviewOutput.model_validate(
        {
            "findings": list(findings),
            "overall_correctness": correctness if findings else "patch is correct",
            "overall_explanation": "The change breaks iteration." if findings else "Looks good.",
            "overall_confidence_score": 0.8,
        }
    )


def wire_dict(result: ReviewOutput) -> dict[str, Any]:
    """The Codex-shaped JSON of a review: what the model sends, without derived fields."""
    derived = {"location_status", "relative_path", "fingerprint", "baseline_state"}
    return result.model_dump(mode="json", exclude={"findings": {"__all__": derived}})
