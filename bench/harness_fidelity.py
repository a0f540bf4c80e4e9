"""How closely each emulating harness reproduces its real client's tool results.

Replays every recorded upstream session (tests/harness/upstream/fixtures/sessions/, captured
from the real clients by tests/harness/upstream/capture_sessions.py) through the harness that
emulates the client and prints, per harness, how many steps give the same result after
normalisation, and how many keep the recording's structure (line layout, tags, paths,
numbers, labels) where we word a long sentence in our own text; `-v` shows each differing
step.

    python bench/harness_fidelity.py [-v]
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.upstream.replay import fixtures, replay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show each differing step")
    args = parser.parse_args(argv)
    total = matched = structured = 0
    print(f"{'harness':<16} {'client':<28} {'identical':>9}  {'same structure':>14}")
    for path in fixtures():
        result = replay(path)
        total += len(result.steps)
        matched += result.matched
        structured += result.matched_markers
        client = f"{result.client} {result.version}"
        count = len(result.steps)
        print(
            f"{result.harness:<16} {client:<28} {result.matched:>4}/{count:<4}"
            f"  {result.matched_markers:>9}/{count:<4}"
        )
        if not args.verbose:
            continue
        for step in result.steps:
            if step.matches:
                continue
            shape = "same structure" if step.same_markers else "structure differs"
            print(
                f"  - {step.label} ({step.tool}): is_error {step.expected_error} vs "
                f"{step.got_error}; {shape}"
            )
            diff = difflib.unified_diff(
                step.expected.splitlines(),
                step.got.splitlines(),
                "upstream",
                "emulation",
                lineterm="",
                n=1,
            )
            for line in list(diff)[:40]:
                print(f"      {line}")
    print(f"{'all':<16} {'':<28} {matched:>4}/{total:<4}  {structured:>9}/{total:<4}")
    return 0 if matched == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
