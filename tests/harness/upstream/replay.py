"""Replay recorded upstream sessions against our emulating harnesses.

A session fixture (written by `capture_sessions`) lists each tool call a real client ran and
what the tool returned to the model. Here the same calls run, in order, through the harness
that emulates that client, in a workspace seeded the same way; each result is normalised the
same way and compared with the recording. Used by the replay test and by
`bench/harness_fidelity.py`, which prints the match count per harness.

Where we word a long sentence in our own text, a step cannot be identical; `markers` is what
such a step must still share with the recording: its line layout and, line by line, its tags,
placeholders and paths, bracketed markers, numbers, file names and leading labels.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.policy import SandboxPolicy
from oiexec.core.types import ToolCall
from oiexec.harness.context import prompt_variables
from oiexec.harness.data import load_spec
from oiexec.harness.manifest import HarnessSetup, ManifestHarness
from oiexec.sandbox.nosandbox import NoSandbox
from tests.harness.upstream.sessions import (
    SESSIONS,
    STREAMED_CUT,
    expand,
    fold_numbers,
    normalise,
    seed,
)

#: What `markers` keeps of a line (everything else counts as wording).
_MARKER = re.compile(
    r"""
      </?[a-z][\w-]*>                # a tag: <tool_use_error>, </shell_metadata>
    | <[A-Z_]+>(?:/[\w.-]*\w)*       # a normalised placeholder with any path after it
    | \[[A-Z][A-Z ]+\]               # a bracketed marker: [CONTENT TRUNCATED]
    | ^\[ | \]$                       # a line wrapped in brackets
    | (?<![\w.])\.?[\w-]+\.[a-z]{2,4}\b | (?<!\S)\.[a-z]{2,4}\b  # a file name, an extension
    | \d+                             # a number: a count, a line, a limit, an exit code
    | ^[A-Z][\w ]*:(?=\s|$)           # a leading label: `String:`, `Output:`
    """,
    re.VERBOSE | re.MULTILINE,
)


def markers(text: str) -> list[list[str]]:
    """Per line of `text`, the fixed parts a model can rely on, in order."""
    return [_MARKER.findall(line) for line in text.split("\n")]


@dataclass(frozen=True)
class StepOutcome:
    label: str
    tool: str
    expected: str
    expected_error: bool | None
    got: str
    got_error: bool

    @property
    def matches(self) -> bool:
        same_flag = self.expected_error is None or self.expected_error == self.got_error
        return same_flag and self.expected == self.got

    @property
    def same_markers(self) -> bool:
        """Identical but for wording: same error flag, line layout and `markers`."""
        same_flag = self.expected_error is None or self.expected_error == self.got_error
        return same_flag and markers(self.expected) == markers(self.got)


@dataclass(frozen=True)
class Replay:
    fixture: str
    client: str
    version: str
    harness: str
    steps: list[StepOutcome]

    @property
    def matched(self) -> int:
        return sum(1 for step in self.steps if step.matches)

    @property
    def matched_markers(self) -> int:
        return sum(1 for step in self.steps if step.same_markers)


def fixtures() -> list[Path]:
    return sorted(SESSIONS.glob("*.json"))


def replay(path: Path) -> Replay:
    """Run the session recorded in `path` through its harness."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        ws, home = root / "ws", root / "home"
        ws.mkdir()
        home.mkdir()
        seed(ws)
        ctx = ToolContext(
            cwd=ws,
            sandbox=NoSandbox(SandboxPolicy(mode="danger-full-access", cwd=ws)),
            items=ItemEmitter(lambda _event: None),
            env={**os.environ, "HOME": str(home)},
            warn=lambda _message: None,
        )
        variables = prompt_variables(ws, shell="/bin/bash", agents_md=None, now=datetime.now(UTC))
        harness = ManifestHarness(load_spec(data["harness"]), HarnessSetup(variables=variables))
        try:
            tools = {tool.spec.name: tool for tool in harness.tools()}
            outcomes: list[StepOutcome] = []
            for index, step in enumerate(data["steps"]):
                args = expand(step["args"], ws)
                call = ToolCall(
                    call_id=f"call_{index:02d}",
                    name=step["tool"],
                    arguments=args if isinstance(args, str) else json.dumps(args),
                    call_type="custom" if isinstance(args, str) else "function",
                )
                output = tools[step["tool"]].run(call, ctx)
                expected, got = step["text"], normalise(output.output, ws=ws, home=home)
                if (data["client"], step["label"]) in STREAMED_CUT:
                    expected, got = fold_numbers(expected), fold_numbers(got)
                outcomes.append(
                    StepOutcome(
                        label=step["label"],
                        tool=step["tool"],
                        expected=expected,
                        expected_error=step["is_error"],
                        got=got,
                        got_error=output.is_error,
                    )
                )
        finally:
            harness.close()
            ctx.cleanup.close()
    return Replay(path.name, data["client"], data["version"], data["harness"], outcomes)
