"""`review --baseline` end to end: a report from one review is the next one's baseline, and a
finding whose code moved down the file is still recognised."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from oiexec.core.errors import ExitCode
from tests.cli.test_json_failures import only_failure
from tests.review.test_reports import validate_sarif
from tests.review.test_review_cli import CALC_BUG, answer, finding, review, review_item
from tests.support.model_server import ModelServer, reply

SUBTRACTS = "[P1] add() subtracts"
SUB_BUG = "[P2] sub() has no docstring"
NEW_BUG = "[P2] sub() is never tested"


def results(path: Path) -> list[dict[str, Any]]:
    log = json.loads(path.read_text())
    validate_sarif(log)
    found: list[dict[str, Any]] = log["runs"][0]["results"]
    return found


def test_a_finding_that_moved_lines_stays_unchanged_and_only_new_ones_block(
    model_server: ModelServer, repo: Path
) -> None:
    (repo / "calc.py").write_text(CALC_BUG)  # `return a - b` in add() is line 2, sub() line 5
    out = repo.parent
    model_server.enqueue(
        reply(
            answer(
                finding(repo / "calc.py", 2, title=SUBTRACTS),
                finding(repo / "calc.py", 5, 6, priority=2, title=SUB_BUG),
            )
        )
    )
    first = review(model_server, repo, "--uncommitted", "--sarif", str(out / "old.sarif"))
    assert first.returncode == ExitCode.REVIEW_BLOCKED, first.stderr
    assert "baselineState" not in results(out / "old.sarif")[0]

    # Three lines above move everything down: add()'s bug is now on line 5.
    (repo / "calc.py").write_text('"""Arithmetic."""\nimport math\n\n' + CALC_BUG)
    moved = finding(repo / "calc.py", 5, title=SUBTRACTS, body="Reworded: it subtracts.")
    new = finding(repo / "calc.py", 9, priority=2, title=NEW_BUG)
    reports = ["--sarif", str(out / "new.sarif"), "--markdown", str(out / "r.md")]
    reports += ["--junit", str(out / "r.xml")]
    model_server.enqueue(reply(answer(moved, new)), reply(answer(moved, new)))
    args = ["--uncommitted", "--baseline", str(out / "old.sarif"), *reports]

    # The P1 finding would block on its own; the baseline has it, so the gate passes.
    passed = review(model_server, repo, *args, "--fail-on", "P1")
    assert passed.returncode == 0, passed.stderr
    assert "review: 2 findings, 1 new (1 unchanged in baseline); " in passed.stderr
    assert "1 baseline finding absent" in passed.stderr
    states = [f["baseline_state"] for f in review_item(passed)["findings"]]
    assert states == ["unchanged", "new"]

    sarif = results(out / "new.sarif")
    assert [(r["ruleId"], r["baselineState"]) for r in sarif] == [
        ("oiexec-review/P1", "unchanged"),
        ("oiexec-review/P2", "new"),
        ("oiexec-review/P2", "absent"),  # the sub() finding this review no longer reports
    ]
    assert sarif[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert SUB_BUG in sarif[2]["message"]["text"]
    assert sarif[2]["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "endLine": 6}

    markdown = (out / "r.md").read_text()
    assert NEW_BUG in markdown and SUBTRACTS not in markdown
    assert "1 already in the baseline" in markdown
    cases = ET.parse(out / "r.xml").getroot().iter("testcase")
    assert [c.get("name", "").split(" (")[0] for c in cases] == [NEW_BUG]

    # A gate that the new P2 finding reaches blocks, and names that finding only.
    blocked = review(model_server, repo, *args, "--fail-on", "P2", "--show-unchanged")
    assert blocked.returncode == ExitCode.REVIEW_BLOCKED, blocked.stderr
    assert "review gate blocked: 1 finding(s)" in blocked.stderr
    assert NEW_BUG in blocked.stderr and f"{SUBTRACTS}\n" not in blocked.stderr
    # --show-unchanged lists the baseline's finding too, marked.
    assert SUBTRACTS in (out / "r.md").read_text()
    cases = list(ET.parse(out / "r.xml").getroot().iter("testcase"))
    assert len(cases) == 2 and len(cases[1].findall("failure")) == 1


def test_a_bad_baseline_is_a_usage_error_before_the_model_runs(
    model_server: ModelServer, repo: Path
) -> None:
    (repo / "calc.py").write_text(CALC_BUG)
    bad = repo.parent / "old.sarif"
    bad.write_text(json.dumps({"version": "2.0.0", "runs": []}))
    result = review(model_server, repo, "--uncommitted", "--baseline", str(bad))
    assert result.returncode == ExitCode.USAGE, result.stderr
    message = f"--baseline {bad}: not a SARIF 2.1.0 log (version is '2.0.0')"
    assert message in result.stderr and message in only_failure(result)
    assert "Traceback" not in result.stderr and model_server.bodies == []
