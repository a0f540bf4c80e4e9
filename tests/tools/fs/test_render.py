from __future__ import annotations

from pathlib import Path

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles import swe
from oiexec.harness.styles.claude import STATE_CURRENT, ClaudeStyle
from oiexec.harness.styles.claude_bare import ClaudeBareStyle
from oiexec.harness.styles.mini import MiniTextStyle
from oiexec.harness.styles.qwen import QwenStyle
from oiexec.harness.styles.swe import SweStyle
from oiexec.tools import layout
from oiexec.tools.fs import Edit, ReplaceResult, WriteResult


def test_mini_observation_short() -> None:
    mini = MiniTextStyle()
    assert mini.observation(0, "hi\n") == "<returncode>0</returncode>\n<output>\nhi\n</output>"
    assert mini.observation(1, "", exception="timed out") == (
        "<exception>timed out</exception>\n<returncode>1</returncode>\n<output>\n</output>"
    )


def test_mini_observation_elides_middle_at_limit() -> None:
    output = "H" * 5000 + "M" * 10 + "T" * 5000
    text = MiniTextStyle().observation(0, output)
    assert text.startswith("<returncode>0</returncode>\n<warning>\n")
    assert f"<output_head>\n{'H' * 5000}\n</output_head>" in text
    assert "<elided_chars>\n10 characters elided\n</elided_chars>" in text
    assert text.endswith(f"<output_tail>\n{'T' * 5000}\n</output_tail>")
    assert "M" not in text.split("</warning>")[1]
    # Just under the limit stays whole.
    assert "<output>" in MiniTextStyle().observation(0, "x" * 9999)


def test_swe_texts() -> None:
    assert swe.swe_observation("") == "The command finished without errors and printed nothing."
    assert swe.swe_observation("ok") == "OBSERVATION:\nok"
    created = WriteResult(Path("/w/a.py"), None, "")
    assert SweStyle().written(created) == "File created successfully at: /w/a.py"
    clipped = swe.clip("x" * 20, limit=5)
    assert clipped.startswith("xxxxx<response clipped><NOTE>") and clipped.endswith("</NOTE>")
    other = ToolInputError("boom", kind="missing")
    assert SweStyle().edit_failed(other, old="") == "boom"


def test_claude_texts() -> None:
    path = Path("/w/a.py")
    claude = ClaudeStyle()
    done = ReplaceResult(path, "a", "b", 1, 1)
    assert claude.error("bad") == "<tool_use_error>bad</tool_use_error>"
    assert claude.replaced(done, [Edit("a", "b")]) == (
        "The file /w/a.py has been updated successfully." + STATE_CURRENT
    )
    assert claude.replaced(done, [Edit("a", "b", replace_all=True)]) == (
        "The file /w/a.py has been updated. All occurrences were successfully replaced."
        + STATE_CURRENT
    )
    assert "current" in ClaudeBareStyle().replaced(done, [Edit("a", "b")])
    # Claude Code 2.1.197's stub names no path (recorded session).
    assert claude.read_unchanged(path, cwd=Path("/w")).startswith("Wasted call")
    assert layout.cat_n(["a", "b"], 99) == "    99\ta\n   100\tb"
    missing = ToolInputError("not found", kind="not_found", path=path)
    assert (
        QwenStyle()
        .edit_failed(missing, old="a")
        .startswith("Failed to edit, 0 occurrences found for old_string in /w/a.py")
    )
