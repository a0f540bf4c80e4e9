"""The text of every JUnit report this package writes (exec, review, batch, batch merge).

junit-xml writes a suite's `time` as the float sum of its cases' times, so cases rounded to
the millisecond still add up to `0.30000000000000004`; every `time` attribute is rounded
here, in the one place all reports pass through, to three decimals.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from junit_xml import TestSuite, to_xml_report_string

__all__ = ["junit_text"]

# Only inside the start tags of the three elements that carry a time: a command's output in
# <system-out> may hold `time="..."` too, and that text is the user's, left as it is.
_TIMED_TAG = re.compile(r"<(?:testsuites|testsuite|testcase)\b[^>]*>")
_TIME = re.compile(r'(\stime=")([^"]*)(")')


def _ms(match: re.Match[str]) -> str:
    try:
        seconds = float(match.group(2))
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{seconds:.3f}{match.group(3)}"


def junit_text(suites: Sequence[TestSuite]) -> str:
    """The pretty-printed UTF-8 report, each `time` in seconds to the millisecond."""
    xml: str = to_xml_report_string(list(suites), prettyprint=True, encoding="utf-8")
    return _TIMED_TAG.sub(lambda tag: _TIME.sub(_ms, tag.group(0)), xml)
