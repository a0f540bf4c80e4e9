"""Each emulating harness returns what the real client returned, step by step.

The sessions in fixtures/sessions/ were recorded from the real clients by
capture_sessions.py (see harnesses/UPSTREAM.md); here the same calls run through our harness
in a workspace seeded the same way, and every result must be identical after normalisation
(workspace and home paths, process ids, saved-output paths). The few steps we knowingly
render differently are listed in `NOT_YET_IDENTICAL` with the reason; such a step must still
differ (so the list cannot go stale).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.upstream.replay import Replay, fixtures, replay

#: (client, step label) -> why our result still differs from the recording.
NOT_YET_IDENTICAL: dict[tuple[str, str], str] = {
    # The tenth and twentieth tool results of the session (whichever steps those are).
    ("claude-code", "edit.before_read"): (
        "Claude Code appends its task-list nudge (a <system-reminder>) to every tenth tool "
        "result; the emulation has no nudge"
    ),
    ("claude-code", "edit.replace_all"): "the task-list nudge on the twentieth result",
    ("opencode", "glob.match"): (
        "opencode 1.18.33 orders glob results by its bundled file finder's ranking (a file "
        "rewritten during the session is not listed first); the emulation lists newest first"
    ),
    ("claude-code", "shell.timeout"): (
        "Claude Code 2.1.197 moves a command that outlives its timeout to the background and "
        "says where its output goes; the emulation stops it"
    ),
    # The native harness's apply_patch failures come from the shared patch engine
    # (oiexec/tools/apply_patch), which deliberately says more than Codex: the chunk, the
    # closest lines, and that no file was changed. Not a wording a style owns.
    ("codex", "patch.missing_file"): "the patch engine's own wording of a missing file",
    ("codex", "patch.context_not_found"): "the patch engine's own wording, with a hint",
}


@pytest.fixture(scope="module", params=fixtures(), ids=lambda p: Path(p).stem)
def session(request: pytest.FixtureRequest) -> Replay:
    return replay(request.param)


def test_every_step_matches_the_real_client(session: Replay) -> None:
    differing = []
    for step in session.steps:
        known = (session.client, step.label) in NOT_YET_IDENTICAL
        if step.matches and known:
            differing.append(f"{step.label}: now identical; drop it from NOT_YET_IDENTICAL")
        elif not step.matches and not known:
            differing.append(
                f"{step.label} ({step.tool}): is_error {step.expected_error} vs "
                f"{step.got_error}\n--- {session.client} {session.version}\n{step.expected}\n"
                f"--- {session.harness}\n{step.got}"
            )
    assert not differing, "\n\n".join(differing)


def test_the_sessions_cover_each_kind_of_result() -> None:
    """A recapture that lost steps would make the comparison hollow."""
    labels = {
        path.stem: {step["label"].split(".")[0] for step in json.loads(path.read_text())["steps"]}
        for path in fixtures()
    }
    assert set(labels) == {
        "claude-code-2.1.197",
        "codex-0.171.0",
        "mini-swe-agent-2.4.6",
        "opencode-1.18.33",
        "qwen-code-0.15.10",
    }
    for name, kinds in labels.items():
        assert "shell" in kinds, name
        if name.startswith("codex"):
            assert "patch" in kinds, name
        elif not name.startswith("mini-swe-agent"):
            assert {"read", "edit", "write"} <= kinds, name
