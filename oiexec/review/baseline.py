"""`review --baseline OLD.sarif`: which findings the baseline already has.

The baseline is an earlier `--sarif` report, and untrusted (a downloaded artifact, a file the
pull request may have planted): it is read size-capped before the model runs, and only what
matching needs is kept from it, every field type-checked.

A finding is `unchanged` when a baseline result has the same `ruleId`, the same artifact URI
and the same fingerprint (identity.py). A baseline result without our `oiexecFinding/v2`
fingerprint (written by an older version) is matched by the older `oiexecReviewFinding/v1`
one, and one with neither by its message text, whitespace and case aside. Each baseline
result matches one finding at most, so two copies of a finding against one in the baseline
leave one `new`. Baseline results nothing matched are `absent`: SARIF lists them so code
scanning sees them fixed. Runs by other tools in the same log are skipped, and so are
results the baseline itself marked `absent` (they were already gone then).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from oiexec.core.errors import UsageError
from oiexec.core.userfile import MIB, describe_size, read_user_file, user_text
from oiexec.review.gate import effective_priority
from oiexec.review.identity import (
    FINGERPRINT_KEY,
    LEGACY_FINGERPRINT_KEY,
    artifact_uri,
    finding_fingerprint,
    legacy_fingerprint,
    message_text,
    normalise,
    rule_id,
)
from oiexec.review.model import ReviewOutput

__all__ = [
    "BASELINE_MAX",
    "Baseline",
    "BaselineComparison",
    "BaselineResult",
    "compare",
    "load_baseline",
    "parse_baseline",
]

#: Far above any review's report (a few KiB per finding); a bigger file is not one of ours.
BASELINE_MAX = 32 * MIB
_TOOL = "oiexec"
_LEVELS = frozenset({"none", "note", "warning", "error"})
_HINT = "pass a SARIF 2.1.0 log written by `interpreter review --sarif`"


@dataclass(frozen=True)
class BaselineResult:
    """What matching and the `absent` SARIF result need of one baseline result."""

    rule_id: str
    #: Percent-decoded, so that `a%20b.py` and `a b.py` compare equal.
    uri: str
    message: str
    fingerprints: dict[str, str] = field(default_factory=dict)
    level: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    #: `SRCROOT` when the baseline's URI was relative to it, as ours are.
    uri_base_id: str | None = None

    def key(self) -> tuple[str, str, str, str]:
        """The strongest identity this result carries (see the module docstring)."""
        for name in (FINGERPRINT_KEY, LEGACY_FINGERPRINT_KEY):
            if name in self.fingerprints:
                return (name, self.rule_id, self.uri, self.fingerprints[name])
        return ("message", self.rule_id, self.uri, normalise(self.message))


@dataclass(frozen=True)
class Baseline:
    path: Path
    results: tuple[BaselineResult, ...]


@dataclass(frozen=True)
class BaselineComparison:
    #: The review with `baseline_state` set on every finding.
    review: ReviewOutput
    #: Baseline results no finding matched, in baseline order.
    absent: tuple[BaselineResult, ...]

    @property
    def new(self) -> int:
        return sum(1 for f in self.review.findings if f.baseline_state == "new")

    @property
    def unchanged(self) -> int:
        return sum(1 for f in self.review.findings if f.baseline_state == "unchanged")

    def summary(self) -> str:
        """`2 findings, 1 new (1 unchanged in baseline); 1 baseline finding absent`."""
        total = _count(len(self.review.findings), "finding")
        text = f"{total}, {self.new} new ({self.unchanged} unchanged in baseline)"
        if self.absent:
            text += f"; {_count(len(self.absent), 'baseline finding')} absent"
        return text


def load_baseline(path: Path, untrusted: Sequence[Path] = ()) -> Baseline:
    """Read and check the file now, before the model runs: a bad baseline is a `UsageError`
    (exit 2) naming the file and what is wrong with it. `untrusted`: directories the change
    under review or its commands may have written (`runner.reports.untrusted_roots`)."""
    name = f"--baseline {path}"
    data = _read(path, untrusted, name)
    return Baseline(path, parse_baseline(user_text(data, name=name), name=name))


def _read(path: Path, untrusted: Sequence[Path], name: str) -> bytes:
    """A baseline inside an untrusted directory (a committed one, one downloaded into the
    checkout or /tmp) is read beneath it, so a link planted there cannot lead the runner to a
    file elsewhere; anywhere else it is the user's own file, read as such."""
    from oiexec.sandbox.reader import ReadRefused, ReadScope, read_file

    named = Path(os.path.abspath(path))
    root = next((r for r in untrusted if named == r or r in named.parents), None)
    if root is None:
        return read_user_file(path, name=name, cap=BASELINE_MAX)
    try:
        return read_file(ReadScope.confined(root), named, max_bytes=BASELINE_MAX).data
    except ReadRefused as exc:
        raise UsageError(f"{name}: {_refusal(exc, root)}") from None
    except OSError as exc:
        raise UsageError(f"{name}: {exc.strerror or exc}") from None


def _refusal(exc: Any, root: Path) -> str:
    """The reader's refusal (worded for the model) in words for this flag."""
    kind = exc.kind
    if kind == "missing":
        return "no such file"
    if kind == "outside":
        return (
            f"a symbolic link (or a path through one) out of {root}, where the change under "
            "review can write; links there are not followed; pass the real path"
        )
    if kind in ("is_directory", "not_a_directory", "special"):
        return "not a regular file; pass the path of a regular file"
    if kind == "too_big":
        return f"over the {describe_size(BASELINE_MAX)} limit for this file; pass a smaller file"
    return str(exc.reason)


def parse_baseline(text: str, *, name: str = "--baseline") -> tuple[BaselineResult, ...]:
    """The results of `text`, a SARIF log; a `UsageError` starting with `name` otherwise."""

    def refuse(what: str) -> UsageError:
        return UsageError(f"{name}: {what}; {_HINT}")

    try:
        log = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError):  # an over-long number, nesting past the stack
        raise refuse("not JSON this reader accepts") from None
    if not isinstance(log, dict):
        raise refuse(f"not a SARIF log (the JSON is {_kind(log)}, not an object)")
    if log.get("version") != "2.1.0":
        raise refuse(f"not a SARIF 2.1.0 log (version is {_shown(log.get('version'))})")
    runs = log.get("runs")
    if not isinstance(runs, list):
        raise refuse("not a SARIF log (no `runs` array)")
    results: list[BaselineResult] = []
    for number, run in enumerate(runs):
        if not isinstance(run, dict):
            raise refuse(f"runs[{number}] is {_kind(run)}, not an object")
        if _tool_name(run) != _TOOL:
            continue  # another tool's findings never match ours
        found = run.get("results")
        if found is None:
            continue  # SARIF's "the tool did not get as far as results"
        if not isinstance(found, list):
            raise refuse(f"runs[{number}].results is {_kind(found)}, not an array")
        for index, result in enumerate(found):
            if not isinstance(result, dict):
                raise refuse(f"runs[{number}].results[{index}] is {_kind(result)}, not an object")
            read = _result(result)
            if read is not None:
                results.append(read)
    return tuple(results)


def compare(review: ReviewOutput, baseline: Baseline, root: Path | None) -> BaselineComparison:
    """Mark each finding `new` or `unchanged`; `root` as for the SARIF report's URIs."""
    pool: dict[tuple[str, str, str, str], list[int]] = {}
    for index, result in enumerate(baseline.results):
        pool.setdefault(result.key(), []).append(index)
    used: set[int] = set()
    findings = []
    for finding in review.findings:
        rule, uri = rule_id(effective_priority(finding)), _same_uri(artifact_uri(finding, root))
        keys = [
            (FINGERPRINT_KEY, rule, uri, finding_fingerprint(finding)),
            (LEGACY_FINGERPRINT_KEY, rule, uri, legacy_fingerprint(finding)),
            ("message", rule, uri, normalise(message_text(finding))),
        ]
        match = next((pool[key].pop(0) for key in keys if pool.get(key)), None)
        if match is not None:
            used.add(match)
        state = "new" if match is None else "unchanged"
        findings.append(finding.model_copy(update={"baseline_state": state}))
    absent = tuple(r for i, r in enumerate(baseline.results) if i not in used)
    return BaselineComparison(review.model_copy(update={"findings": findings}), absent)


def _result(result: dict[str, Any]) -> BaselineResult | None:
    """The parts of one SARIF result that matter here; None for one that cannot match."""
    if result.get("baselineState") == "absent":
        return None
    rule = result.get("ruleId")
    if not isinstance(rule, str):
        descriptor = result.get("rule")
        rule = descriptor.get("id") if isinstance(descriptor, dict) else None
    if not isinstance(rule, str) or not rule:
        return None
    message = _get(result, "message", "text")
    prints = result.get("partialFingerprints")
    fingerprints = {
        key: value
        for key, value in (prints.items() if isinstance(prints, dict) else ())
        if key in (FINGERPRINT_KEY, LEGACY_FINGERPRINT_KEY) and isinstance(value, str)
    }
    locations = result.get("locations")
    first = locations[0] if isinstance(locations, list) and locations else {}
    uri = _get(first, "physicalLocation", "artifactLocation", "uri")
    base = _get(first, "physicalLocation", "artifactLocation", "uriBaseId")
    region = _get(first, "physicalLocation", "region")
    start, end = _line(region, "startLine"), _line(region, "endLine")
    level = result.get("level")
    return BaselineResult(
        rule_id=rule,
        uri=_same_uri(uri) if isinstance(uri, str) else "",
        message=message if isinstance(message, str) else "",
        fingerprints=fingerprints,
        level=level if level in _LEVELS else None,
        start_line=start,
        end_line=end if end is not None and start is not None and end >= start else None,
        uri_base_id="SRCROOT" if base == "SRCROOT" and isinstance(uri, str) else None,
    )


def _get(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _line(region: Any, key: str) -> int | None:
    value = region.get(key) if isinstance(region, dict) else None
    # bool is an int to Python, not to SARIF.
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _same_uri(uri: str) -> str:
    """URIs compared decoded: `a%20b.py` and `a b.py` name the same file."""
    return unquote(uri)


def _tool_name(run: dict[str, Any]) -> Any:
    return _get(run, "tool", "driver", "name")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    return repr(value)[:40]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
