"""Golden fixture files: normalised JSON compared with `tests/harness/fixtures/`.

Regenerate after an intended change with `OIEXEC_UPDATE_GOLDEN=1 python -m pytest
tests/harness -n 0 -q` and review the diff.
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
#: Read at import: the suite's autouse fixture clears OIEXEC_* variables before each test.
_UPDATE = bool(os.environ.get("OIEXEC_UPDATE_GOLDEN"))

_VOLATILE = [
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"), "<NOW>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<DATE>"),
    (re.compile(r"Ran (\d+) tests? in \d+\.\d+s"), r"Ran \1 test in <T>s"),
    (re.compile(r"Wall time: \d+\.\d+ seconds"), "Wall time: <T> seconds"),
    (re.compile(r"Chunk ID: [0-9a-f]+"), "Chunk ID: <ID>"),
    (re.compile(r"Process Group PGID: \d+"), "Process Group PGID: <PGID>"),
    (re.compile(r"[0-9a-f]{7,40}(?= initial)"), "<COMMIT>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<UUID>"),
    (re.compile(r"index [0-9a-f]{7,}\.\.[0-9a-f]{7,}"), "index <A>..<B>"),
    (re.compile(r"<timezone>[^<]*</timezone>"), "<timezone><TZ></timezone>"),
    (re.compile(r"<shell>[^<]*</shell>"), "<shell><SHELL></shell>"),
]


def normalise(value: Any, repo: Path) -> Any:
    """`value` with the run's paths, dates, timings and host details replaced by markers."""
    uname = platform.uname()
    text = json.dumps(value, ensure_ascii=False)
    replacements = {
        str(repo): "<REPO>",
        f"{uname.system} {uname.release} {uname.version} {uname.machine}": "<UNAME>",
        f"{uname.system} {uname.release}": "<OS_VERSION>",
    }
    for old, new in replacements.items():
        text = text.replace(json.dumps(old)[1:-1], new)
    for pattern, marker in _VOLATILE:
        text = pattern.sub(marker, text)
    return json.loads(text)


def check_golden(name: str, value: Any) -> None:
    """Compare `value` with fixture `name` (written instead when regenerating)."""
    path = FIXTURES / f"{name}.json"
    rendered = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    if _UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
        return
    assert path.exists(), f"missing golden fixture {path}; generate it with OIEXEC_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert rendered == expected, (
        f"{path.name} differs from the request this harness sends now; if the change is "
        "intended, regenerate with OIEXEC_UPDATE_GOLDEN=1 and review the diff"
    )
