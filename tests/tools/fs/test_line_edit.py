from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles.swe import SweStyle
from oiexec.tools.fs._text import split_lines
from oiexec.tools.fs.line_edit import edit_lines, insert_after, insert_lines, replace_lines


def allow_all(path: Path) -> str | None:
    return None


def test_replace_range_in_file(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("1\n2\n3\n4\n")
    result = edit_lines(path, 2, 3, "two\nthree\nextra", can_write=allow_all)
    assert path.read_text() == "1\ntwo\nthree\nextra\n4\n"
    assert (result.first_line, result.last_line) == (2, 4)
    assert SweStyle().edited_region(path, result.after, result.first_line, result.last_line) == (
        f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet "
        f"of {path}:\n     1\t1\n     2\ttwo\n     3\tthree\n     4\textra\n     5\t4\n"
        "     6\t\nCheck that the lines above say what you meant; if not, edit the file once "
        "more."
    )


def test_insert_after_line_and_at_top(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("a\nb\n")
    insert_lines(path, 1, "mid", can_write=allow_all)
    assert path.read_text() == "a\nmid\nb\n"
    insert_lines(path, 0, "top\n", can_write=allow_all)
    assert path.read_text() == "top\na\nmid\nb\n"
    with pytest.raises(ToolInputError, match=r"\[0, 4\]"):
        insert_lines(path, 5, "x", can_write=allow_all)


def test_zero_based_and_invalid_ranges(tmp_path: Path) -> None:
    assert replace_lines("a\nb\nc\n", 0, 0, "A", base=0) == "A\nb\nc\n"
    with pytest.raises(ToolInputError, match="Invalid line range"):
        replace_lines("a\n", 1, 3, "x")
    with pytest.raises(ToolInputError, match="Invalid line range"):
        replace_lines("a\n", 0, 0, "x")


def test_line_endings_preserved() -> None:
    assert replace_lines("a\r\nb\r\n", 1, 1, "x") == "x\r\nb\r\n"
    assert replace_lines("a\nb", 2, 2, "c") == "a\nc"  # still no final newline
    assert replace_lines("a\nb", 1, 1, "c") == "c\nb"
    assert insert_after("a\nb", 2, "c") == "a\nb\nc\n"
    assert replace_lines("a\nb\nc\n", 2, 2, "") == "a\nc\n"  # empty text deletes


lines_st = st.lists(st.text(alphabet="xy ", max_size=4), max_size=8)


@given(lines=lines_st, new=lines_st, data=st.data())
def test_replace_lines_is_a_list_splice(
    lines: list[str], new: list[str], data: st.DataObject
) -> None:
    content = "".join(line + "\n" for line in lines)
    start = data.draw(st.integers(1, len(lines) + 1))
    end = data.draw(st.integers(start - 1, len(lines)))
    text = "".join(line + "\n" for line in new)
    out = replace_lines(content, start, end, text)
    assert split_lines(out) == lines[: start - 1] + new + lines[end:]


@given(
    lines=lines_st,
    new=st.lists(st.text(alphabet="xy", max_size=3), min_size=1, max_size=3),
    data=st.data(),
)
def test_insert_after_puts_lines_after_the_line(
    lines: list[str], new: list[str], data: st.DataObject
) -> None:
    content = "".join(line + "\n" for line in lines)
    after = data.draw(st.integers(0, len(lines)))
    out = insert_after(content, after, "".join(x + "\n" for x in new))
    assert split_lines(out) == lines[:after] + new + lines[after:]
