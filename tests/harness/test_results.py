"""Golden rendered tool results: each harness's tools run the same scenarios (success, empty
output, failures, read-before-write refusals, ambiguous edits) and what the model would read is
compared with `fixtures/results/<harness>.json`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from oiexec.harness.data import harness_ids
from oiexec.harness.spec import HarnessSpec
from oiexec.tools.entry import ToolEntry
from tests.harness.conftest import HarnessFactory, Workspace, run_tool
from tests.harness.golden import check_golden, normalise

TEXT = "alpha\nbeta\nbeta\n"


def _scenarios(entry: ToolEntry, ws: Workspace) -> list[tuple[str, dict[str, Any]]]:
    f = str(ws.root / "f.txt")
    impl = entry.impl
    if impl == "shell":
        return [
            ("output", {"command": "echo hello"}),
            ("empty", {"command": "true"}),
            # A subshell's exit: SWE-agent's persistent shell must survive the scenario.
            ("failure", {"command": "echo oops >&2; (exit 2)"}),
        ]
    if impl == "fs_read":
        return [("file", {"path": f}), ("missing", {"path": str(ws.root / "nope.txt")})]
    if impl == "fs_write":
        return [
            ("unread existing", {"path": f, "content": "new\n"}),
            ("new file", {"path": str(ws.root / "made.txt"), "content": "x\n"}),
        ]
    if impl == "fs_replace":
        edits = [
            ("before any read", "alpha", "ALPHA"),
            ("not found", "gamma", "delta"),
            ("ambiguous", "beta", "BETA"),
            ("success", "alpha", "ALPHA"),
        ]
        if "edit" in entry.args:  # kimi-cli: {"edit": {"old", "new"}}
            return [(n, {"path": f, "edits": {"old": o, "new": w}}) for n, o, w in edits]
        return [(n, {"path": f, "old": o, "new": w}) for n, o, w in edits]
    if impl == "glob":
        return [("txt", {"pattern": "*.txt"}), ("none", {"pattern": "*.rs"})]
    if impl == "grep":
        return [("match", {"pattern": "beta", "path": str(ws.root)})]
    if impl == "list":
        return [("root", {"path": str(ws.root)})]
    if impl == "todo_write":
        field = entry.options.get("content_field", "content")
        status = "done" if field == "title" else "completed"
        todo: dict[str, Any] = {field: "Fix it", "status": status}
        if entry.name == "todo_write":
            todo["id"] = "1"
        if entry.name == "TodoWrite":
            todo["priority"] = "high"
        return [("list", {"todos": [todo, {**todo, field: "Test it", "status": "pending"}]})]
    if impl == "task_create":
        return [("create", {"subject": "Fix it", "description": "the bug"})]
    if impl in ("task_update", "task_get"):
        return [("first", {"taskId": "1", **({"status": "completed"} if "update" in impl else {})})]
    if impl in ("task_list", "todo_read", "submit"):
        return [("plain", {})]
    if impl == "plan_write":
        return [("plan", {"plan": [{"step": "Fix it", "status": "in_progress"}]})]
    if impl == "unified_diff":
        diff = "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-alpha\n+omega\n"
        return [("diff", {"patch": diff})]
    if impl == "str_replace_editor":
        return [
            ("view", {"command": "view", "path": f}),
            ("not found", {"command": "str_replace", "path": f, "old_str": "zz", "new_str": "y"}),
            ("ambiguous", {"command": "str_replace", "path": f, "old_str": "beta", "new_str": "y"}),
            ("insert", {"command": "insert", "path": f, "insert_line": 1, "new_str": "one"}),
            ("undo", {"command": "undo_edit", "path": f}),
            ("directory", {"command": "view", "path": str(ws.root)}),
            ("relative path", {"command": "view", "path": "f.txt"}),
            ("no file_text", {"command": "create", "path": str(ws.root / "new.txt")}),
            ("unknown command", {"command": "delete", "path": f}),
        ]
    if impl == "task_output":
        return [("missing", {"task_id": "b0", "block": False, "timeout": 0})]
    if impl == "task_stop":
        return [("missing", {"task_id": "b0"})]
    if impl == "execute":
        return [("python", {"language": "python", "code": "x = 41\nprint(x + 1)"})]
    raise AssertionError(f"no scenario for impl {impl}")


def _model_args(entry: ToolEntry, canonical: dict[str, Any]) -> dict[str, Any]:
    to_model = {impl_name: model for model, impl_name in entry.args.items()}
    return {to_model.get(key, key): value for key, value in canonical.items()}


@pytest.mark.parametrize("harness_id", [h for h in harness_ids() if h not in ("native", "minimal")])
def test_rendered_results(
    harness_id: str, make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness(harness_id)
    if harness_id == "swe-agent":
        import subprocess

        subprocess.run(["git", "init", "-q"], cwd=workspace.root, check=True)
    results: list[dict[str, Any]] = []
    target = workspace.root / "f.txt"
    for entry in harness.spec.tools:
        target.write_text(TEXT)
        harness.runtime.files.forget(target)
        for scenario, canonical in _scenarios(entry, workspace):
            if scenario == "not found":  # later edits come after the model read the file
                harness.runtime.files.record_read(target)
            output = run_tool(harness, workspace, entry.name, _model_args(entry, canonical))
            results.append(
                {
                    "tool": entry.name,
                    "scenario": scenario,
                    "is_error": output.is_error,
                    "output": output.output,
                }
            )
    check_golden(f"results/{harness_id}", normalise(results, workspace.root))
    # The same events for every harness: edits are file changes, commands are commands.
    kinds = {e.item.type for e in workspace.events if e.type == "item.completed"}  # type: ignore[union-attr]
    if any(t.impl in ("fs_replace", "str_replace_editor") for t in harness.spec.tools):
        assert "file_change" in kinds
    if any(t.impl in ("shell", "execute") for t in harness.spec.tools):
        assert "command_execution" in kinds


def test_an_unknown_render_fails_at_load() -> None:
    manifest = {
        "id": "typo",
        "emulates": {"product": "x"},
        "wire": ["chat"],
        "tools": [{"name": "Read", "impl": "fs_read", "render": "claud"}],
    }
    with pytest.raises(ValidationError) as info:
        HarnessSpec.model_validate(manifest)
    message = str(info.value)
    assert "harness `typo`, tool `Read`: render `claud` is not a style" in message
    assert "default, plain, claude, claude-bare" in message


def test_a_failed_edit_leaves_nothing_to_undo(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    """SWE-agent's editor: undo_edit reverts the last edit that changed the file; an edit that
    failed (text not found) must not be the one undone, or the model is told a change was
    reverted when nothing was."""
    harness = make_harness("swe-agent")
    target = workspace.root / "f.txt"
    target.write_text(TEXT)
    path = str(target)

    def editor(**args: Any) -> str:
        return run_tool(harness, workspace, "str_replace_editor", {"path": path, **args}).output

    editor(command="str_replace", old_str="gamma", new_str="x")
    assert "no earlier edit" in editor(command="undo_edit")
    editor(command="str_replace", old_str="alpha", new_str="ALPHA")
    editor(command="str_replace", old_str="gamma", new_str="x")
    editor(command="undo_edit")
    assert target.read_text() == TEXT
