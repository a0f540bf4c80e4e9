"""Reading a JUnit XML report that a test runner wrote (pytest, Jest's jest-junit, Go's
go-junit-report, Maven surefire, ...): which test cases failed, and what the report says of
each. `exec --from-junit` puts them in the prompt (runner/from_junit.py).

A report is untrusted input: CI wrote it, but the tests that filled it are the repository's,
so every byte of a failure's text is theirs. Parsing is therefore bounded and inert:

- expat, driven directly, builds no tree: only the attributes of suites and cases and the
  text of `<failure>` and `<error>` are kept, so memory grows with the file (which the
  caller caps), never with its nesting or element count;
- a document type declaration is refused before its internal subset is read, so no entity
  can be declared, expanded (billion laughs) or fetched (external entities);
- nesting deeper than `MAX_DEPTH` is refused;
- anything that is not well-formed JUnit XML ends in one `UsageError` naming the file and
  what is wrong, whatever the bytes.

The dialects agree on `<testsuites>`/`<testsuite>`/`<testcase classname name>` with a
`<failure>` or `<error>` child for a failed case (`message` and `type` attributes, the trace
as text) and `<skipped>` for one not run, which is not a failure. Surefire's
`<flakyFailure>`/`<rerunFailure>` (a test that passed when rerun) are not failures either.
What differs is where the file is named, which `producer` records for the caller.
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field
from typing import Literal

from oiexec.core.errors import UsageError

__all__ = ["MAX_DEPTH", "FailedTest", "JUnitReport", "Producer", "parse_junit"]

#: Real reports nest three or four levels (testsuites, testsuite, testcase, failure); some
#: tools nest suites in suites. Far past that is an attack or not a report.
MAX_DEPTH = 64

Producer = Literal["pytest", "jest", "go", "maven", "unknown"]

_FAILING = ("failure", "error")
#: File name endings of test files Jest runs.
JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")


@dataclass(frozen=True)
class FailedTest:
    """One failing test case, as the report has it."""

    name: str
    classname: str
    #: The case's `file` attribute (pytest's xunit1 family, jest-junit with
    #: `addFileAttribute`), else the enclosing suite's; None when neither names one.
    file: str | None
    #: The enclosing `<testsuite>`'s name (Jest's is often the test file's path).
    suite: str
    kind: Literal["failure", "error"]
    message: str
    #: The exception type (`type` attribute), when given.
    type: str
    #: The element's text: the trace or assertion output.
    text: str


@dataclass(frozen=True)
class JUnitReport:
    producer: Producer
    #: Test cases in the report, failing or not.
    cases: int
    failed: tuple[FailedTest, ...] = ()
    skipped: int = 0


class _Refused(Exception):
    """Raised from an expat handler to stop the parse; becomes the `UsageError`."""


@dataclass
class _Case:
    name: str
    classname: str
    file: str | None
    suite: str
    kind: Literal["failure", "error"] | None = None
    message: str = ""
    type: str = ""
    text: list[str] = field(default_factory=list)
    skipped: bool = False


class _Reader:
    """The expat handlers and what they collect."""

    def __init__(self) -> None:
        self.depth = 0
        self.root: str | None = None
        #: (name, file) of the open `<testsuite>` elements, innermost last.
        self.suites: list[tuple[str, str | None]] = []
        self.case: _Case | None = None
        #: The depth of the open `<testcase>`: its `<failure>` is one below it.
        self.case_depth = 0
        #: The depth of the open `<failure>`/`<error>` whose text is kept, else None.
        self.capturing: int | None = None
        self.cases = 0
        self.skipped = 0
        self.failed: list[FailedTest] = []
        self.hints: set[Producer] = set()

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f"elements are nested more than {MAX_DEPTH} deep")
        if self.root is None:
            if tag not in ("testsuites", "testsuite"):
                raise _Refused(
                    f"the root element is <{_clip(tag)}>, not <testsuites> or <testsuite>"
                )
            self.root = tag
        if tag == "testsuite":
            name = attrs.get("name", "")
            self.suites.append((name, attrs.get("file") or attrs.get("filepath")))
            if name == "pytest":
                self.hints.add("pytest")
        elif tag == "testcase" and self.case is None:
            suite, suite_file = self.suites[-1] if self.suites else ("", None)
            self.case = _Case(
                name=attrs.get("name", ""),
                classname=attrs.get("classname", ""),
                file=attrs.get("file") or suite_file,
                suite=suite,
            )
            self.case_depth = self.depth
            self.cases += 1
        elif self.case is not None and self.depth_in_case() == 1:
            if tag in _FAILING and self.case.kind is None:
                self.case.kind = "failure" if tag == "failure" else "error"
                self.case.message = attrs.get("message", "")
                self.case.type = attrs.get("type", "")
                self.capturing = self.depth
            elif tag == "skipped":
                self.case.skipped = True
        elif tag == "property":
            self._property_hint(attrs.get("name", ""))
        elif tag == "testsuites":
            # The defaults of jest-junit's `suiteName` and of pytest (8 and later); pytest's
            # suite is also named `pytest` unless `junit_suite_name` says otherwise.
            name = attrs.get("name", "")
            if "jest" in name.lower():
                self.hints.add("jest")
            elif name == "pytest tests":
                self.hints.add("pytest")

    def depth_in_case(self) -> int:
        """How deep the current element is below the open `<testcase>`."""
        return self.depth - self.case_depth

    def end(self, tag: str) -> None:
        if self.capturing == self.depth:
            self.capturing = None
        if tag == "testcase" and self.case is not None and self.depth == self.case_depth:
            self._close_case(self.case)
            self.case = None
        elif tag == "testsuite" and self.suites:
            self.suites.pop()
        self.depth -= 1

    def text(self, data: str) -> None:
        if self.capturing is not None and self.case is not None:
            self.case.text.append(data)

    def _close_case(self, case: _Case) -> None:
        if case.kind is None:
            self.skipped += case.skipped
            return
        self.failed.append(
            FailedTest(
                name=case.name,
                classname=case.classname,
                file=case.file,
                suite=case.suite,
                kind=case.kind,
                message=case.message,
                type=case.type,
                text="".join(case.text),
            )
        )

    def _property_hint(self, name: str) -> None:
        if name.startswith("go."):
            self.hints.add("go")
        elif name.startswith(("java.", "maven.", "surefire.")):
            self.hints.add("maven")

    def producer(self) -> Producer:
        known: tuple[Producer, ...] = ("pytest", "jest", "go", "maven")
        for producer in known:
            if producer in self.hints:
                return producer
        files = [test.file or test.suite for test in self.failed]
        if files and all(name.endswith(JS_SUFFIXES) for name in files):
            return "jest"
        return "unknown"


def _refuse_doctype(*_: object) -> None:
    raise _Refused(
        "it declares a document type (<!DOCTYPE>), which a JUnit report never needs; "
        "entities are not expanded, so such a file is refused"
    )


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_junit(data: bytes, *, name: str) -> JUnitReport:
    """The failing tests of the JUnit XML `data`; a `UsageError` starting with `name` (the
    flag and the path) when it is not a well-formed JUnit report."""
    reader = _Reader()
    parser = xml.parsers.expat.ParserCreate()
    parser.buffer_text = True
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_doctype
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise UsageError(f"{name}: not a JUnit XML report: {exc}") from None
    except xml.parsers.expat.ExpatError as exc:
        what = xml.parsers.expat.errors.messages.get(exc.code, str(exc)) if exc.code else str(exc)
        # expat says "not well-formed (invalid token)": the part after its own heading.
        what = what.removeprefix("not well-formed ").strip("()")
        raise UsageError(
            f"{name}: not well-formed XML: {what} at line {exc.lineno}, column {exc.offset}",
            hint="Pass the JUnit XML file the test runner wrote (e.g. pytest --junitxml=FILE).",
        ) from None
    except (ValueError, LookupError, UnicodeError, RecursionError) as exc:
        # An encoding declaration expat hands to Python's codecs (unknown, or not one a
        # byte stream can be read in).
        raise UsageError(f"{name}: cannot be read as XML: {_clip(str(exc), 120)}") from None
    if reader.root is None:
        raise UsageError(f"{name}: not a JUnit XML report: it has no root element")
    return JUnitReport(
        producer=reader.producer(),
        cases=reader.cases,
        failed=tuple(reader.failed),
        skipped=reader.skipped,
    )
