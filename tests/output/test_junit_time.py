"""Every JUnit report's `time` attributes are seconds to the millisecond (`0.3`, not
`0.30000000000000004`): exec, review and batch (a run's and a merge's) reports alike."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import junit_xml

from oiexec.core.events import Usage
from oiexec.output.junit import CheckRun, RunReport, render_junit
from oiexec.output.junit_text import junit_text
from oiexec.review.model import ReviewOutput
from oiexec.review.render.junit import render_failure_junit
from oiexec.review.render.junit import render_junit as render_review
from oiexec.runner.batch.record import TaskRecord
from oiexec.runner.batch.report import render as render_batch

_MS = re.compile(r"\d+(\.\d{1,3})?")


def _times(xml: str) -> list[str]:
    root = ET.fromstring(xml.encode())
    return [node.attrib["time"] for node in root.iter() if "time" in node.attrib]


def _assert_ms(xml: str) -> list[str]:
    times = _times(xml)
    assert times, xml
    for value in times:
        assert _MS.fullmatch(value), (value, xml)
    return times


def test_batch_suite_time_is_the_sum_to_the_millisecond() -> None:
    # 0.1 + 0.2 is 0.30000000000000004 as a float sum: junit-xml's suite and root time.
    records = [
        TaskRecord(index=0, id="a", status="success", duration_s=0.1),
        TaskRecord(index=1, id="b", status="failed", exit_code=1, duration_s=0.2),
        TaskRecord(index=2, id="c", status="success", duration_s=1.23456789),
    ]
    _summary, junit = render_batch("nightly", records)
    times = _assert_ms(junit)
    assert times == ["1.535", "1.535", "0.100", "0.200", "1.235"]


def test_exec_and_review_reports_keep_to_milliseconds() -> None:
    report = RunReport(
        prompt="fix it",
        thread_id="t",
        model="m",
        status="success",
        failure_message=None,
        limit_name=None,
        exit_code=0,
        duration_s=0.1 + 0.2 + 12.3456789,
        commands=[],
        final_message="done",
        usage=Usage(input_tokens=1, output_tokens=1),
        check_command="pytest",
        checks=[CheckRun(attempt=1, exit_code=0, duration_s=0.1, output="ok")],
    )
    _assert_ms(render_junit(report))
    review = ReviewOutput(
        overall_correctness="patch is correct",
        overall_explanation="fine",
        overall_confidence_score=0.9,
    )
    _assert_ms(render_review(review))
    _assert_ms(render_failure_junit("no git repository", 1))


def test_a_time_in_the_output_text_is_left_as_written() -> None:
    text = 'took time="0.30000000000000004"'
    case = junit_xml.TestCase("c", elapsed_sec=0.1 + 0.2, stdout=text)
    xml = junit_text([junit_xml.TestSuite("s", [case])])
    assert _assert_ms(xml) == ["0.300", "0.300", "0.300"]
    out = ET.fromstring(xml.encode()).find("testsuite/testcase/system-out")
    assert out is not None and out.text == text
