"""What makes a finding the same finding from one review to the next: its rule, its file and
a fingerprint that does not change when the code around it moves.

The SARIF report writes these (`ruleId`, the artifact URI, `partialFingerprints`) and a later
`review --baseline` reads them back, so both sides must compute them here, the one way.

Two fingerprints, both in every SARIF result:
- `oiexecFinding/v2` (`FINGERPRINT_KEY`): rule, path, normalised title and the flagged code
  lines with whitespace collapsed, when `locate_findings` could read them; moving the code
  keeps it, editing the flagged lines or the title changes it. Without readable lines (the
  file is missing, the range is past its end) the code part is left out.
- `oiexecReviewFinding/v1` (`LEGACY_FINGERPRINT_KEY`): path and lowercased title, what
  earlier versions wrote; kept so code scanning keeps tracking alerts it already has, and so
  an older report still works as a baseline.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from oiexec.review.gate import effective_priority
from oiexec.review.model import LineRange, ReviewFinding

__all__ = [
    "FINGERPRINT_KEY",
    "LEGACY_FINGERPRINT_KEY",
    "artifact_uri",
    "code_text",
    "finding_fingerprint",
    "fingerprint",
    "legacy_fingerprint",
    "message_text",
    "normalise",
    "rule_id",
]

FINGERPRINT_KEY = "oiexecFinding/v2"
LEGACY_FINGERPRINT_KEY = "oiexecReviewFinding/v1"
#: The most of the flagged lines that goes into a fingerprint: a finding spanning a whole
#: generated file must not make every report hash megabytes.
_CODE_MAX_CHARS = 64 * 1024


def rule_id(priority: int) -> str:
    return f"oiexec-review/P{priority}"


def normalise(text: str) -> str:
    """Lowercased, whitespace runs collapsed to one space, ends stripped."""
    return " ".join(text.split()).lower()


def code_text(content: bytes, span: LineRange) -> str | None:
    """The flagged lines of `content`, whitespace collapsed (indentation, blank lines and
    line endings do not count); None when the range is not in the file or holds only blanks."""
    lines = content.decode("utf-8", errors="replace").splitlines()
    if span.end > len(lines):
        return None
    text = " ".join(" ".join(lines[span.start - 1 : span.end]).split())
    return text[:_CODE_MAX_CHARS] or None


def fingerprint(finding: ReviewFinding, code: str | None) -> str:
    """The `oiexecFinding/v2` fingerprint; `code` from `code_text` (None: not readable)."""
    parts = [
        rule_id(effective_priority(finding)),
        finding.display_path,
        normalise(finding.title),
        "code" if code is not None else "no-code",
        code or "",
    ]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def finding_fingerprint(finding: ReviewFinding) -> str:
    """The one `locate_findings` stored, else the one without code."""
    return finding.fingerprint or fingerprint(finding, None)


def legacy_fingerprint(finding: ReviewFinding) -> str:
    key = f"{finding.display_path}\0{finding.title.strip().lower()}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def message_text(finding: ReviewFinding) -> str:
    """The SARIF `message.text`: the title, then the body."""
    return finding.title if not finding.body else f"{finding.title}\n\n{finding.body}"


def artifact_uri(finding: ReviewFinding, root: Path | None) -> str:
    """The SARIF artifact URI: repository-relative and percent-encoded when it can be."""
    if finding.relative_path is not None:
        return quote(finding.relative_path)
    raw = PurePosixPath(finding.code_location.absolute_file_path.replace("\\", "/"))
    if root is not None and raw.is_absolute():
        try:
            raw = raw.relative_to(root.resolve().as_posix())
        except ValueError:
            return Path(raw).as_uri()
    return quote(raw.as_posix())
