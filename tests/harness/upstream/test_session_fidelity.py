"""Each emulating harness returns what the real client returned, step by step.

The sessions in fixtures/sessions/ were recorded from the real clients by
capture_sessions.py (see harnesses/UPSTREAM.md); here the same calls run through our harness
in a workspace seeded the same way, and every result must be identical after normalisation
(workspace and home paths, process ids, saved-output paths). The few steps we knowingly
render differently are listed in `NOT_YET_IDENTICAL` with the reason; such a step must still
differ (so the list cannot go stale). Where the only difference is that a long sentence is in
our own words (the project writes its own text rather than copying the clients'), the step
must still have the recording's structure: the same error flag, line layout, tags, paths,
numbers and labels (`replay.markers`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.upstream.replay import Replay, StepOutcome, fixtures, replay

#: The reason for a step whose only difference is the wording of a long sentence.
OWN_WORDING = "own wording of a long sentence (markers and structure identical)"

#: (client, step label) -> why our result still differs from the recording.
NOT_YET_IDENTICAL: dict[tuple[str, str], str] = {
    ("claude-code", "read.binary"): OWN_WORDING,
    ("claude-code", "edit.not_unique"): OWN_WORDING,
    ("opencode", "shell.timeout"): OWN_WORDING,
    ("opencode", "edit.before_read"): OWN_WORDING,  # opencode's not-unique failure
    ("opencode", "edit.not_found"): OWN_WORDING,
    ("opencode", "edit.not_unique"): OWN_WORDING,
    ("qwen-code", "shell.long"): OWN_WORDING,
    ("qwen-code", "edit.before_read"): OWN_WORDING,
    ("qwen-code", "edit.not_found"): OWN_WORDING,
    ("qwen-code", "write.existing_unread"): OWN_WORDING,
    ("qwen-code", "read.again_unchanged"): OWN_WORDING,
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
        reason = NOT_YET_IDENTICAL.get((session.client, step.label))
        if step.matches and reason:
            differing.append(f"{step.label}: now identical; drop it from NOT_YET_IDENTICAL")
        elif reason == OWN_WORDING and not step.same_markers:
            differing.append(
                f"{step.label} ({step.tool}): reworded, but its structure differs too "
                f"(is_error {step.expected_error} vs {step.got_error})\n"
                f"--- {session.client} {session.version}\n{step.expected}\n"
                f"--- {session.harness}\n{step.got}"
            )
        elif not step.matches and not reason:
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


def test_own_wording_must_keep_the_markers() -> None:
    """The looser comparison forgives wording only: a dropped count, tag, path, label or line
    break is still a difference."""
    recorded = (
        "<tool_use_error>Saw 2 copies in <WORKSPACE>/a.py, say more.\nString: x</tool_use_error>"
    )

    def step(got: str) -> StepOutcome:
        return StepOutcome("edit.x", "Edit", recorded, True, got, True)

    reworded = (
        "<tool_use_error>There are 2 of them in <WORKSPACE>/a.py; add context.\n"
        "String: y</tool_use_error>"
    )
    assert step(reworded).same_markers and not step(reworded).matches
    for broken in (
        reworded.replace("2", "two"),
        reworded.replace("<tool_use_error>", ""),
        reworded.replace("<WORKSPACE>/a.py", "the file"),
        reworded.replace("\nString:", " String:"),
        reworded.replace("String:", "Text:"),
    ):
        assert not step(broken).same_markers, broken
    assert not StepOutcome("edit.x", "Edit", recorded, True, reworded, False).same_markers
