"""Reading JUnit reports (`exec --from-junit`): the reports pytest and Jest really write, small
samples of go-junit-report's and Maven surefire's (their tools are not installed here), and
whatever else a file may hold, which ends in tests or one `UsageError`."""

from __future__ import annotations

import codecs
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.core.errors import UsageError
from oiexec.output.junit_read import MAX_DEPTH, parse_junit
from tests.support.junit_reports import jest_installed, jest_project, jest_report, pytest_report

NAME = "--from-junit report.xml"

PYTEST_KINDS = """\
import pytest


@pytest.fixture
def database():
    raise RuntimeError("no database here")


def test_needs_database(database):
    pass


def test_compares():
    assert [1, 2] == [1, 3]


@pytest.mark.skip(reason="later")
def test_later():
    pass


def test_passes():
    pass
"""


def test_a_pytest_report_names_failures_errors_and_not_skips(tmp_path: Path) -> None:
    (tmp_path / "test_kinds.py").write_text(PYTEST_KINDS)
    data = pytest_report(tmp_path, tmp_path / "report.xml").read_bytes()
    report = parse_junit(data, name=NAME)

    assert report.producer == "pytest"
    assert (report.cases, report.skipped) == (4, 1)
    error, failure = report.failed
    assert (error.classname, error.name, error.kind) == (
        "test_kinds",
        "test_needs_database",
        "error",
    )
    assert "no database here" in error.message and "RuntimeError" in error.text
    assert (failure.name, failure.kind, failure.file) == ("test_compares", "failure", None)
    assert failure.message.startswith("assert [1, 2] == [1, 3]")
    assert "test_kinds.py:14: AssertionError" in failure.text


def test_a_jest_report_names_the_test_and_its_file(tmp_path: Path) -> None:
    project = tmp_path / "js"
    project.mkdir()
    jest_project(project, jest_installed())
    with_file = parse_junit(jest_report(project, tmp_path / "a.xml").read_bytes(), name=NAME)
    without = parse_junit(
        jest_report(project, tmp_path / "b.xml", file_attribute=False).read_bytes(), name=NAME
    )

    assert with_file.producer == without.producer == "jest"
    assert with_file.cases == 2
    (test,) = with_file.failed
    assert (test.name, test.suite, test.file) == (
        "add adds two numbers",
        "add",
        "test/calc.test.js",
    )
    # jest-junit gives no message attribute: the assertion is in the text.
    assert test.kind == "failure" and test.message == ""
    assert "Expected: 5" in test.text and "Received: -1" in test.text
    (bare,) = without.failed
    assert bare.file is None and bare.name == test.name


GO_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" failures="1">
\t<testsuite name="example.com/calc" tests="2" failures="1" errors="0" id="0" time="0.003">
\t\t<properties>
\t\t\t<property name="go.version" value="go1.22.0 linux/amd64"></property>
\t\t</properties>
\t\t<testcase name="TestAdd" classname="example.com/calc" time="0.000">
\t\t\t<failure message="Failed" type="">    calc_test.go:8: add(2, 3) = -1, want 5</failure>
\t\t</testcase>
\t\t<testcase name="TestZero" classname="example.com/calc" time="0.000"></testcase>
\t</testsuite>
</testsuites>
"""

SUREFIRE_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report.xsd"
    name="com.example.CalcTest" time="0.05" tests="4" errors="1" skipped="1" failures="1">
  <properties>
    <property name="java.version" value="21.0.2"/>
  </properties>
  <testcase name="adds" classname="com.example.CalcTest" time="0.01">
    <failure message="expected: &lt;5&gt; but was: &lt;-1&gt;"
        type="org.opentest4j.AssertionFailedError"><![CDATA[AssertionFailedError: expected 5
\tat com.example.CalcTest.adds(CalcTest.java:12)]]></failure>
    <system-out><![CDATA[adding]]></system-out>
  </testcase>
  <testcase name="divides" classname="com.example.CalcTest" time="0.01">
    <error message="/ by zero" type="java.lang.ArithmeticException">ArithmeticException</error>
  </testcase>
  <testcase name="flaky" classname="com.example.CalcTest" time="0.02">
    <flakyFailure message="timing" type="java.lang.AssertionError">first run failed</flakyFailure>
  </testcase>
  <testcase name="later" classname="com.example.CalcTest" time="0"><skipped/></testcase>
</testsuite>
"""


def test_a_go_report() -> None:
    report = parse_junit(GO_REPORT, name=NAME)
    assert (report.producer, report.cases) == ("go", 2)
    (test,) = report.failed
    assert (test.classname, test.name, test.suite) == (
        "example.com/calc",
        "TestAdd",
        "example.com/calc",
    )
    assert test.message == "Failed" and "want 5" in test.text


def test_a_surefire_report_counts_failures_and_errors_not_flaky_or_skipped_tests() -> None:
    report = parse_junit(SUREFIRE_REPORT, name=NAME)
    assert (report.producer, report.cases, report.skipped) == ("maven", 4, 1)
    assert [(t.name, t.kind, t.type) for t in report.failed] == [
        ("adds", "failure", "org.opentest4j.AssertionFailedError"),
        ("divides", "error", "java.lang.ArithmeticException"),
    ]
    # CDATA is text like any other; the case's output is not part of the failure.
    assert report.failed[0].text.endswith("CalcTest.java:12)")
    assert report.failed[0].message == "expected: <5> but was: <-1>"


def test_a_report_from_an_unknown_tool_and_encoding() -> None:
    xml = '<?xml version="1.0" encoding="UTF-16"?><testsuite name="s"><testcase name="t">'
    xml += '<failure message="broke">trace ü</failure></testcase></testsuite>'
    report = parse_junit(codecs.BOM_UTF16_LE + xml.encode("utf-16-le"), name=NAME)
    assert report.producer == "unknown"
    assert [(t.name, t.suite, t.text) for t in report.failed] == [("t", "s", "trace ü")]


BILLION_LAUGHS = textwrap.dedent(
    """\
    <?xml version="1.0"?>
    <!DOCTYPE lolz [
      <!ENTITY lol "lol">
      <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
      <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
    ]>
    <testsuites><testsuite><testcase name="x"><failure>&lol3;</failure></testcase>
    </testsuite></testsuites>
    """
).encode()
EXTERNAL = b'<!DOCTYPE t SYSTEM "http://127.0.0.1:9/evil.dtd"><testsuites/>'
LOCAL_FILE = (
    b'<!DOCTYPE t [<!ENTITY f SYSTEM "file:///etc/passwd">]>'
    b'<testsuites><testsuite><testcase name="x"><failure>&f;</failure></testcase></testsuite>'
    b"</testsuites>"
)


@pytest.mark.parametrize(
    "data", [BILLION_LAUGHS, EXTERNAL, LOCAL_FILE], ids=["laughs", "dtd", "file"]
)
def test_a_document_type_declaration_is_refused_before_any_entity_is_read(data: bytes) -> None:
    with pytest.raises(UsageError) as caught:
        parse_junit(data, name=NAME)
    assert caught.value.message == (
        f"{NAME}: not a JUnit XML report: it declares a document type (<!DOCTYPE>), which a "
        "JUnit report never needs; entities are not expanded, so such a file is refused"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "not well-formed XML: no element found at line 1, column 0"),
        (b"<testsuites><testsuite>", "not well-formed XML: no element found at line 1, column 23"),
        (
            b"<testsuites>&undefined;</testsuites>",
            "not well-formed XML: undefined entity at line 1",
        ),
        (b"\xff\xfe\x00garbage", "not well-formed XML"),
        (b'{"tests": []}', "not well-formed XML: invalid token at line 1, column 0"),
        (b"<html/>", "not a JUnit XML report: the root element is <html>"),
        (b'<?xml version="1.0" encoding="x-nope"?><testsuites/>', "cannot be read as XML"),
        (
            b"<testsuites>" + b"<testsuite>" * (MAX_DEPTH + 1),
            f"not a JUnit XML report: elements are nested more than {MAX_DEPTH} deep",
        ),
    ],
    ids=["empty", "truncated", "entity", "binary", "json", "html", "encoding", "deep"],
)
def test_what_is_not_a_junit_report_is_one_clear_usage_error(data: bytes, expected: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_junit(data, name=NAME)
    assert caught.value.message.startswith(f"{NAME}: {expected}"), caught.value.message


_FRAGMENTS = st.sampled_from(
    [
        "<testsuites>", "</testsuites>", "<testsuite name='a b'>", "</testsuite>",
        "<testcase classname='c' name='n'>", "</testcase>", "<failure message='m'>",
        "</failure>", "<error>", "</error>", "<skipped/>", "<![CDATA[x]]>", "&amp;", "&x;",
        "<!DOCTYPE d>", "<?xml version='1.0'?>", "<!-- c -->", "text", "<", ">", "'", '"',
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400) | st.lists(_FRAGMENTS, max_size=30).map("".join).map(str.encode))
def test_any_bytes_give_a_report_or_the_usage_error(data: bytes) -> None:
    try:
        report = parse_junit(data, name=NAME)
    except UsageError as exc:
        assert exc.message.startswith(f"{NAME}: ")
    else:
        assert len(report.failed) <= report.cases
