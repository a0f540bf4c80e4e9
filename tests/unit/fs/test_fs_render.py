from __future__ import annotations

from pathlib import Path

from oiexec.core.errors import ToolInputError
from oiexec.tools.fs import render


def test_mini_observation_short() -> None:
    assert (
        render.mini_observation(0, "hi\n") == "<returncode>0</returncode>\n<output>\nhi\n</output>"
    )
    assert render.mini_observation(1, "", exception="timed out") == (
        "<exception>timed out</exception>\n<returncode>1</returncode>\n<output>\n</output>"
    )


def test_mini_observation_elides_middle_at_limit() -> None:
    output = "H" * 5000 + "M" * 10 + "T" * 5000
    text = render.mini_observation(0, output)
    assert text.startswith("<returncode>0</returncode>\n<warning>\n")
    assert f"<output_head>\n{'H' * 5000}\n</output_head>" in text
    assert "<elided_chars>\n10 characters elided\n</elided_chars>" in text
    assert text.endswith(f"<output_tail>\n{'T' * 5000}\n</output_tail>")
    assert "M" not in text.split("</warning>")[1]
    # Just under the limit stays whole.
    assert "<output>" in render.mini_observation(0, "x" * 9999)


def test_swe_texts() -> None:
    assert (
        render.swe_observation("")
        == "Your command ran successfully and did not produce any output."
    )
    assert render.swe_observation("ok") == "OBSERVATION:\nok"
    assert render.swe_created(Path("/w/a.py")) == "File created successfully at: /w/a.py"
    clipped = render.swe_clip("x" * 20, limit=5)
    assert clipped.startswith("xxxxx<response clipped><NOTE>") and clipped.endswith("</NOTE>")
    other = ToolInputError("boom", kind="missing")
    assert render.swe_error(other) == "boom"


def test_claude_texts() -> None:
    path = Path("/w/a.py")
    assert render.claude_tool_error("bad") == "<tool_use_error>bad</tool_use_error>"
    assert render.claude_edit(path) == "The file /w/a.py has been updated successfully."
    assert render.claude_edit(path, replace_all=True, old="a", new="b") == (
        "The file /w/a.py has been updated. All occurrences of 'a' were successfully replaced "
        "with 'b'."
    )
    assert "current" in render.claude_bare_edit(path)
    assert str(path) in render.claude_read_unchanged(path)
    assert render.cat_n(["a", "b"], 99) == "    99\ta\n   100\tb"
    assert render.qwen_edit_not_found(path).startswith(
        "Failed to edit, 0 occurrences found for old_string in /w/a.py"
    )
