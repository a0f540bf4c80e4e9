from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles import kimi_cli
from oiexec.harness.styles.claude import ClaudeStyle
from oiexec.harness.styles.kimi_code import KimiCodeStyle
from oiexec.harness.styles.opencode import OpencodeStyle
from oiexec.harness.styles.qwen import QwenStyle
from oiexec.harness.styles.swe import SweStyle
from oiexec.tools import layout
from oiexec.tools.fs.read import read_window


def make(tmp_path: Path, text: str, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_whole_file_claude_style(tmp_path: Path) -> None:
    path = make(tmp_path, "alpha\nbeta\n")
    result = read_window(path)
    assert ClaudeStyle().read(result) == "1\talpha\n2\tbeta\n3\t"
    assert result.is_complete and result.stopped_by == "eof"


def test_missing_directory_and_binary_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match="does not exist") as missing:
        read_window(tmp_path / "nope.py")
    assert missing.value.kind == "missing"
    with pytest.raises(ToolInputError, match="is a directory"):
        read_window(tmp_path)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x89PNG\x00\x01")
    with pytest.raises(ToolInputError, match="binary") as binary:
        read_window(blob)
    assert binary.value.kind == "binary"


def test_no_trailing_newline_and_crlf(tmp_path: Path) -> None:
    path = make(tmp_path, "a\r\nb\r\nc")
    result = read_window(path)
    assert result.lines == ("a", "b", "c")
    assert result.crlf
    assert result.total_lines == 3


def test_offsets_zero_and_one_based(tmp_path: Path) -> None:
    path = make(tmp_path, "".join(f"line{i}\n" for i in range(1, 11)))
    one = read_window(path, offset=3, limit=2, base=1)
    zero = read_window(path, offset=3, limit=2, base=0)
    assert one.lines == ("line3", "line4") and one.start_line == 3
    assert zero.lines == ("line4", "line5") and zero.start_line == 4
    # Claude Code treats offset 0 as the start of the file.
    assert read_window(path, offset=0, limit=1).lines == ("line1",)


def test_negative_offset_reads_the_tail(tmp_path: Path) -> None:
    path = make(tmp_path, "".join(f"{i}\n" for i in range(1, 21)))
    result = read_window(path, offset=-3, max_tail=1000)
    assert result.lines == ("18", "19", "20") and result.start_line == 18
    with pytest.raises(ToolInputError, match="negative"):
        read_window(path, offset=-3)
    with pytest.raises(ToolInputError, match="at most 5"):
        read_window(path, offset=-6, max_tail=5)


def test_long_lines_cut_with_suffix(tmp_path: Path) -> None:
    path = make(tmp_path, "x" * 30 + "\nshort\n")
    result = read_window(path, max_line_chars=10, line_cut_suffix="...")
    assert result.lines == ("x" * 10 + "...", "short")
    assert result.truncated_lines == (1,)


def test_caps_and_stop_reasons(tmp_path: Path) -> None:
    path = make(tmp_path, "".join(f"{i:04d}\n" for i in range(50)))
    assert read_window(path, limit=5).stopped_by == "limit"
    capped = read_window(path, limit=40, max_lines=10)
    assert len(capped.lines) == 10 and capped.stopped_by == "max_lines"
    by_bytes = read_window(path, max_bytes=12)
    assert by_bytes.lines == ("0000", "0001") and by_bytes.stopped_by == "max_bytes"
    with pytest.raises(ToolInputError, match="offset and limit"):
        read_window(path, max_file_bytes=100)
    assert len(read_window(path, limit=3, max_file_bytes=100).lines) == 3


def test_claude_empty_and_past_end_reminders(tmp_path: Path) -> None:
    empty = read_window(make(tmp_path, "", "empty.txt"))
    assert ClaudeStyle().read(empty) == (
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (1). "
        "The file has 1 lines.</system-reminder>"
    )
    short = read_window(make(tmp_path, "a\nb\n"), offset=9)
    assert short.past_end and short.lines == ()
    assert ClaudeStyle().read(short) == (
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (9)."
        " The file has 2 lines.</system-reminder>"
    )


def test_kimi_parts_and_footer(tmp_path: Path) -> None:
    path = make(tmp_path, "one\ntwo\nthree\n")
    result = read_window(path, offset=2, max_lines=1000)
    message = kimi_cli.read_message(result)
    assert message == (
        "2 lines read from file starting from line 2. Total lines in file: 3. End of file reached."
    )
    assert kimi_cli.result_parts(message, layout.cat_n(result.lines, result.start_line)) == [
        f"<system>{message}</system>",
        "     2\ttwo\n     3\tthree",
    ]
    assert KimiCodeStyle().read(result) == f"     2\ttwo\n     3\tthree\n<system>{message}</system>"
    assert kimi_cli.result_parts(None, "") == ["<system>Tool output is empty.</system>"]
    assert kimi_cli.result_parts("bad path", "", error=True) == ["<system>ERROR: bad path</system>"]


def test_kimi_limit_messages(tmp_path: Path) -> None:
    path = make(tmp_path, "".join(f"{i}\n" for i in range(10)) + "y" * 30 + "\n")
    capped = read_window(path, limit=5000, max_lines=4)
    assert kimi_cli.read_message(capped).endswith("Max 4 lines reached.")
    cut = read_window(path, offset=11, max_line_chars=20, line_cut_suffix="...")
    assert "Lines [11] were truncated." in kimi_cli.read_message(cut)


def test_opencode_read(tmp_path: Path) -> None:
    path = make(tmp_path, "a\nb\nc\n")
    assert OpencodeStyle().read(read_window(path)) == (
        f"<path>{path}</path>\n<type>file</type>\n<content>\n1: a\n2: b\n3: c\n\n"
        "(End of file - total 3 lines)\n</content>"
    )
    partial = OpencodeStyle().read(read_window(path, limit=2))
    assert partial.endswith(
        "1: a\n2: b\n\n(Showing lines 1-2 of 3. Use offset=3 to continue.)\n</content>"
    )


def test_qwen_read_raw_and_partial(tmp_path: Path) -> None:
    path = make(tmp_path, "a\nb\nc\nd\n")
    assert QwenStyle().read(read_window(path, base=0)) == "a\nb\nc\nd\n"
    partial = read_window(path, offset=1, limit=2, base=0)
    # Qwen Code counts the empty line after the final line break (recorded from 0.15.10).
    assert QwenStyle().read(partial) == "Showing lines 2-3 of 5 total lines.\n\n---\n\nb\nc"


def test_swe_view(tmp_path: Path) -> None:
    path = make(tmp_path, "x = 1\n")
    assert SweStyle().read(read_window(path)) == (
        f"Here's the result of running `cat -n` on {path}:\n     1\tx = 1\n"
    )


line_text = st.text(
    st.characters(blacklist_characters="\n\r\x00", max_codepoint=0x2FF), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(line_text, max_size=30),
    trailing=st.booleans(),
    offset=st.one_of(st.none(), st.integers(-40, 40)),
    limit=st.one_of(st.none(), st.integers(1, 40)),
    base=st.sampled_from([0, 1]),
    max_lines=st.one_of(st.none(), st.integers(1, 25)),
    max_line_chars=st.one_of(st.none(), st.integers(1, 10)),
    max_bytes=st.one_of(st.none(), st.integers(1, 80)),
)
def test_every_window_is_a_slice_of_the_file(
    lines: list[str],
    trailing: bool,
    offset: int | None,
    limit: int | None,
    base: int,
    max_lines: int | None,
    max_line_chars: int | None,
    max_bytes: int | None,
) -> None:
    text = "".join(line + "\n" for line in lines)
    if not trailing and lines and lines[-1]:
        text = text[:-1]  # the last line without its newline is still a line
    with tempfile.TemporaryDirectory() as tmp:
        path = make(Path(tmp), text)
        result = read_window(
            path,
            offset=offset,
            limit=limit,
            base=base,  # type: ignore[arg-type]
            default_limit=20,
            max_lines=max_lines,
            max_line_chars=max_line_chars,
            max_bytes=max_bytes,
            max_tail=1000,
        )
    assert result.total_lines == len(lines)
    first = result.start_line - 1
    if offset is None:
        assert first == 0
    elif offset < 0:
        assert first == max(0, len(lines) + offset)
    else:
        assert first == max(0, offset - base)
    expected = lines[first : first + len(result.lines)]
    if max_line_chars is not None:
        expected = [line[:max_line_chars] for line in expected]
    assert list(result.lines) == expected
    want = 20 if limit is None else limit
    assert len(result.lines) <= (want if max_lines is None else min(want, max_lines))
    if max_bytes is not None and len(result.lines) > 1:
        assert sum(len(line.encode()) + 1 for line in result.lines) <= max_bytes
    if result.stopped_by == "eof":
        assert first + len(result.lines) == len(lines) or result.past_end
    numbered = layout.cat_n(result.lines, result.start_line).split("\n") if result.lines else []
    for n, row in enumerate(numbered, start=result.start_line):
        assert row.split("\t", 1)[0].strip() == str(n)
