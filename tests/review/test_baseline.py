"""`review --baseline`, in process: fingerprints, matching, the gate, the reports, and the
baseline file as untrusted input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oiexec.core.errors import ExitCode, UsageError
from oiexec.review import baseline as baseline_module
from oiexec.review.baseline import Baseline, compare, load_baseline, parse_baseline
from oiexec.review.gate import GatePolicy, blocking_findings
from oiexec.review.identity import FINGERPRINT_KEY, LEGACY_FINGERPRINT_KEY
from oiexec.review.locate import locate_findings
from oiexec.review.model import ReviewFinding, ReviewOutput
from oiexec.review.render.github import github_annotations
from oiexec.review.render.junit import render_junit
from oiexec.review.render.markdown import render_markdown
from oiexec.review.render.sarif import render_sarif, sarif_text
from tests.review.conftest import finding, git, review
from tests.review.test_reports import validate_sarif

OURS = {"driver": {"name": "oiexec"}}
CODE = "def load(path):\n    handle = open(path)\n    return handle.read()\n"


@pytest.fixture
def src_repo(git_repo: Path) -> Path:
    (git_repo / "load.py").write_text(CODE)
    git(git_repo, "add", "load.py")
    git(git_repo, "commit", "-q", "-m", "load")
    return git_repo


def located(root: Path, *findings: ReviewFinding) -> ReviewOutput:
    return locate_findings(review(*findings), root, None)


def fingerprint_of(root: Path, start: int, end: int, **fields: Any) -> str:
    [one] = located(root, finding(str(root / "load.py"), start, end, **fields)).findings
    assert one.fingerprint is not None
    return one.fingerprint


def baseline_of(root: Path, old: ReviewOutput) -> Baseline:
    """`old` written as the SARIF report, read back as a baseline."""
    text = sarif_text(old, repo_root=root)
    return Baseline(root / "old.sarif", parse_baseline(text))


def shift(root: Path, lines: int) -> None:
    (root / "load.py").write_text("# header\n" * lines + CODE)


# --- fingerprints --------------------------------------------------------------------------


def test_fingerprint_survives_lines_inserted_above_and_reindentation(src_repo: Path) -> None:
    before = fingerprint_of(src_repo, 2, 3)
    shift(src_repo, 7)
    assert fingerprint_of(src_repo, 9, 10) == before
    (src_repo / "load.py").write_text(CODE.replace("    ", "\t") + "\n\n")
    assert fingerprint_of(src_repo, 2, 3) == before


def test_fingerprint_changes_with_the_code_the_title_or_the_rule(src_repo: Path) -> None:
    before = fingerprint_of(src_repo, 2, 3)
    assert fingerprint_of(src_repo, 1, 2) != before  # other lines
    assert fingerprint_of(src_repo, 2, 3, title="Another problem") != before
    assert fingerprint_of(src_repo, 2, 3, priority=0) != before
    # Case and spacing of the title do not matter.
    title = "  OFF-BY-ONE in  the loop bound "
    assert fingerprint_of(src_repo, 2, 3, title=title) == before
    (src_repo / "load.py").write_text(CODE.replace("open(path)", "open(path, 'rb')"))
    assert fingerprint_of(src_repo, 2, 3) != before


def test_fingerprint_without_readable_lines_leaves_the_lines_out(src_repo: Path) -> None:
    """A missing file or a range past the end: path, rule and title still identify it."""
    prints = {
        located(src_repo, finding(str(src_repo / "gone.py"), start, title="Gone"))
        .findings[0]
        .fingerprint
        for start in (4, 40)
    }
    assert len(prints) == 1 and None not in prints
    assert fingerprint_of(src_repo, 50, 60) == fingerprint_of(src_repo, 70, 70)
    assert fingerprint_of(src_repo, 50, 60) != fingerprint_of(src_repo, 2, 3)


# --- matching ------------------------------------------------------------------------------


def test_moved_finding_is_unchanged_new_one_new_vanished_one_absent(src_repo: Path) -> None:
    leak = dict(title="Leaks the file handle", priority=1)
    old = located(
        src_repo,
        finding(str(src_repo / "load.py"), 2, 3, **leak),
        finding(str(src_repo / "a.txt"), 4, title="Old problem", priority=2),
    )
    shift(src_repo, 5)
    now = located(
        src_repo,
        finding(str(src_repo / "load.py"), 7, 8, **leak, body="Said differently now."),
        finding(str(src_repo / "b.txt"), 1, title="New problem", priority=1),
    )
    comparison = compare(now, baseline_of(src_repo, old), src_repo)
    assert [f.baseline_state for f in comparison.review.findings] == ["unchanged", "new"]
    assert [r.message for r in comparison.absent] == [
        "Old problem\n\nThe loop stops one element early."
    ]
    assert comparison.summary() == (
        "2 findings, 1 new (1 unchanged in baseline); 1 baseline finding absent"
    )

    log = render_sarif(comparison.review, repo_root=src_repo, absent=comparison.absent)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert [r["baselineState"] for r in results] == ["unchanged", "new", "absent"]
    absent = results[2]
    assert (absent["ruleId"], absent["ruleIndex"], absent["level"]) == (
        "oiexec-review/P2",
        2,
        "warning",
    )
    assert absent["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a.txt"
    assert set(absent["partialFingerprints"]) == {FINGERPRINT_KEY, LEGACY_FINGERPRINT_KEY}


def test_each_baseline_result_matches_once(src_repo: Path) -> None:
    one = finding(str(src_repo / "load.py"), 2, 3)
    old = located(src_repo, one)
    now = located(src_repo, one, one, one)
    comparison = compare(now, baseline_of(src_repo, old), src_repo)
    assert [f.baseline_state for f in comparison.review.findings] == ["unchanged", "new", "new"]
    assert comparison.absent == ()
    twice = compare(now, baseline_of(src_repo, located(src_repo, one, one)), src_repo)
    assert [f.baseline_state for f in twice.review.findings] == ["unchanged", "unchanged", "new"]


def test_rule_and_file_must_match_too(src_repo: Path) -> None:
    old = located(src_repo, finding(str(src_repo / "a.txt"), 2, title="Same title"))
    now = located(
        src_repo,
        finding(str(src_repo / "a.txt"), 2, title="Same title", priority=0),  # other rule
        finding(str(src_repo / "b.txt"), 2, title="Same title"),  # other file
    )
    comparison = compare(now, baseline_of(src_repo, old), src_repo)
    assert [f.baseline_state for f in comparison.review.findings] == ["new", "new"]
    assert len(comparison.absent) == 1


def older_report(root: Path, old: ReviewOutput, keep: set[str]) -> Baseline:
    """A baseline as an older version wrote it: only the fingerprints in `keep`."""
    log = render_sarif(old, repo_root=root)
    for result in log["runs"][0]["results"]:
        prints = {k: v for k, v in result.pop("partialFingerprints").items() if k in keep}
        if prints:
            result["partialFingerprints"] = prints
    return Baseline(root / "old.sarif", parse_baseline(json.dumps(log)))


def test_older_baselines_match_by_legacy_fingerprint_then_by_message(src_repo: Path) -> None:
    old = located(src_repo, finding(str(src_repo / "load.py"), 2, 3))
    shift(src_repo, 2)
    edited = located(src_repo, finding(str(src_repo / "load.py"), 4, 4))  # other lines
    # With our v2 fingerprint the flagged code counts; the v1 one was path and title only.
    assert compare(edited, baseline_of(src_repo, old), src_repo).new == 1
    legacy = older_report(src_repo, old, {LEGACY_FINGERPRINT_KEY})
    assert compare(edited, legacy, src_repo).unchanged == 1
    bare = older_report(src_repo, old, set())
    assert compare(edited, bare, src_repo).unchanged == 1
    reworded = located(src_repo, finding(str(src_repo / "load.py"), 4, 4, body="Other words."))
    assert compare(reworded, bare, src_repo).new == 1


def test_absent_results_of_the_baseline_and_other_tools_are_skipped() -> None:
    result = {"ruleId": "oiexec-review/P1", "message": {"text": "x"}}
    log = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "oiexec"}},
                "results": [result, {**result, "baselineState": "absent"}],
            },
            {"tool": {"driver": {"name": "CodeQL"}}, "results": [result]},
            {"tool": {"driver": {"name": "oiexec"}}, "results": None},
            {"tool": {"driver": {"name": "oiexec"}}, "results": [result]},
        ],
    }
    assert len(parse_baseline(json.dumps(log))) == 2


# --- the gate and the reports --------------------------------------------------------------


@pytest.fixture
def compared(src_repo: Path) -> ReviewOutput:
    old = located(
        src_repo, finding(str(src_repo / "load.py"), 2, 3, title="Known leak", priority=0)
    )
    now = located(
        src_repo,
        finding(str(src_repo / "load.py"), 2, 3, title="Known leak", priority=0),
        finding(str(src_repo / "a.txt"), 1, title="Fresh bug", priority=2),
    )
    return compare(now, baseline_of(src_repo, old), src_repo).review


def test_only_new_findings_count_for_the_gate(compared: ReviewOutput) -> None:
    assert [f.title for f in blocking_findings(compared, GatePolicy(fail_on=3))] == ["Fresh bug"]
    assert blocking_findings(compared, GatePolicy(fail_on=1)) == []


def test_markdown_junit_and_annotations_list_new_findings_unless_asked(
    compared: ReviewOutput,
) -> None:
    markdown = render_markdown(compared, policy=GatePolicy(fail_on=1))
    assert "Fresh bug" in markdown and "Known leak" not in markdown
    assert "✅ passed" in markdown and "1 already in the baseline" in markdown
    everything = render_markdown(compared, show_unchanged=True)
    assert "| Known leak |" in everything and "no (in the baseline)" in everything

    suite = ET.fromstring(render_junit(compared)).find("testsuite")
    assert suite is not None
    assert [c.get("name", "")[:9] for c in suite.iter("testcase")] == ["Fresh bug"]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["baseline_new"], props["baseline_unchanged"]) == ("1", "1")
    all_cases = ET.fromstring(render_junit(compared, show_unchanged=True)).iter("testcase")
    assert len(list(all_cases)) == 2

    assert len(github_annotations(compared)) == 1
    assert len(github_annotations(compared, show_unchanged=True)) == 2


def test_all_findings_in_the_baseline_say_so(src_repo: Path) -> None:
    one = located(src_repo, finding(str(src_repo / "load.py"), 2, 3))
    quiet = compare(one, baseline_of(src_repo, one), src_repo).review
    assert "No new findings." in render_markdown(quiet)
    suite = ET.fromstring(render_junit(quiet)).find("testsuite")
    assert suite is not None and [c.get("name") for c in suite.iter("testcase")] == [
        "no new findings"
    ]


# --- the baseline file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON (Expecting property name"),
        ("[]", "not a SARIF log (the JSON is an array, not an object)"),
        ('{"runs": []}', "not a SARIF 2.1.0 log (version is missing)"),
        ('{"version": "2.1.0"}', "not a SARIF log (no `runs` array)"),
        ('{"version": "2.1.0", "runs": [3]}', "runs[0] is a number, not an object"),
        (
            json.dumps({"version": "2.1.0", "runs": [{"tool": OURS, "results": {}}]}),
            "runs[0].results is an object, not an array",
        ),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_bad_baseline_content_names_the_file_and_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "old.sarif"
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        load_baseline(path)
    assert str(caught.value).startswith(f"--baseline {path}: ")
    assert message in str(caught.value) and "interpreter review --sarif" in str(caught.value)
    assert caught.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize("inside", [False, True], ids=["users-own", "in-untrusted-dir"])
def test_missing_oversized_and_non_regular_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inside: bool
) -> None:
    untrusted = (tmp_path,) if inside else ()

    def problem(path: Path) -> str:
        with pytest.raises(UsageError) as caught:
            load_baseline(path, untrusted)
        return str(caught.value)

    assert problem(tmp_path / "nope.sarif") == f"--baseline {tmp_path / 'nope.sarif'}: no such file"
    assert "not a regular file" in problem(tmp_path)
    big = tmp_path / "big.sarif"
    big.write_text(json.dumps({"version": "2.1.0", "runs": []}) + " " * 2048)
    monkeypatch.setattr(baseline_module, "BASELINE_MAX", 1024)
    assert "over the 1 KiB limit" in problem(big)
    small = tmp_path / "small.sarif"
    small.write_text(json.dumps({"version": "2.1.0", "runs": []}))
    assert load_baseline(small, untrusted).results == ()


def test_a_link_planted_in_the_repository_is_not_followed_out(tmp_path: Path) -> None:
    """A committed baseline the pull request turned into a link to a file of the runner's."""
    outside = tmp_path / "outside.sarif"
    outside.write_text(json.dumps({"version": "2.1.0", "runs": []}))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "baseline.sarif").symlink_to(outside)
    with pytest.raises(UsageError) as caught:
        load_baseline(repo / "baseline.sarif", (repo,))
    assert f"out of {repo}" in str(caught.value) and "not followed" in str(caught.value)
    # Named by the user outside any such directory, a link is theirs to follow.
    assert load_baseline(repo / "baseline.sarif").results == ()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "ruleId",
                    "rule",
                    "id",
                    "message",
                    "text",
                    "locations",
                    "physicalLocation",
                    "artifactLocation",
                    "uri",
                    "uriBaseId",
                    "region",
                    "startLine",
                    "endLine",
                    "level",
                    "partialFingerprints",
                    FINGERPRINT_KEY,
                    "baselineState",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_JSON, results=st.lists(_JSON, max_size=4))
def test_any_json_is_a_baseline_or_a_usage_error(document: Any, results: list[Any]) -> None:
    """Arbitrary JSON, whole or as the results of an oiexec run, never fails otherwise; what
    is accepted gives a valid SARIF log."""
    wrapped = {
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "oiexec"}}, "results": results}],
    }
    for text in (json.dumps(document), json.dumps(wrapped)):
        try:
            read = parse_baseline(text)
        except UsageError as exc:
            assert exc.exit_code == ExitCode.USAGE
            continue
        comparison = compare(review(), Baseline(Path("old.sarif"), read), None)
        assert len(comparison.absent) == len(read)
        validate_sarif(render_sarif(comparison.review, absent=comparison.absent))
