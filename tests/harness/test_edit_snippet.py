"""Qwen Code's edit result shows the edited lines with four lines around them, numbered as
the client counts them (the empty line after a final line break is a line)."""

from __future__ import annotations

from tests.harness.conftest import HarnessFactory, Workspace, run_tool


def test_the_edited_region_and_four_lines_around_it(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    path = workspace.root / "twenty.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 21)))
    harness = make_harness("qwen-code")
    run_tool(harness, workspace, "read_file", {"file_path": str(path)})
    args = {"file_path": str(path), "old_string": "line 10\n", "new_string": "ten\nTEN\n"}
    out = run_tool(harness, workspace, "edit", args)
    shown = "\n".join(["line 6", "line 7", "line 8", "line 9", "ten", "TEN"])
    shown += "\n" + "\n".join(f"line {n}" for n in range(11, 15))
    assert out.output == (
        f"The file: {path} has been updated. Showing lines 6-15 of 22 from the edited "
        f"file:\n\n---\n\n{shown}"
    )


def test_a_new_file_is_shown_whole(make_harness: HarnessFactory, workspace: Workspace) -> None:
    path = workspace.root / "new.txt"
    args = {"file_path": str(path), "old_string": "", "new_string": "a\nb\n"}
    out = run_tool(make_harness("qwen-code"), workspace, "edit", args)
    assert path.read_text() == "a\nb\n"
    assert out.output == (
        f"Created new file: {path} with provided content. Showing lines 1-3 of 3 from the "
        "edited file:\n\n---\n\na\nb\n"
    )
