from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles.swe import SweStyle
from oiexec.tools.fs.replace import Edit, replace_in_file, replace_text


def allow_all(path: Path) -> str | None:
    return None


def deny_all(path: Path) -> str | None:
    return f"{path}: writes are not allowed in the read-only sandbox"


def test_unique_replace_edits_file(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f():\n    return 1\n")
    result = replace_in_file(path, Edit("return 1", "return 2"), can_write=allow_all)
    assert path.read_text() == "def f():\n    return 2\n"
    assert result.replacements == 1 and result.first_line == 2
    assert result.before == "def f():\n    return 1\n"


def test_ambiguous_names_count_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\ny = 2\nx = 1\n")
    with pytest.raises(ToolInputError) as info:
        replace_in_file(path, Edit("x = 1", "x = 3"), can_write=allow_all)
    err = info.value
    assert err.kind == "ambiguous" and err.count == 2 and err.lines == (1, 3)
    assert "Found 2 occurrences" in err.message and "replace_all" in err.message
    assert path.read_text() == "x = 1\ny = 2\nx = 1\n"
    assert SweStyle().edit_failed(err, old="x = 1") == (
        "No replacement was performed: old_str `x = 1` matches more than once, in lines [1, 3]. "
        "Give an old_str that matches in only one place."
    )
    replace_in_file(path, Edit("x = 1", "x = 3", replace_all=True), can_write=allow_all)
    assert path.read_text() == "x = 3\ny = 2\nx = 3\n"


def test_not_found_and_identical(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a\n")
    with pytest.raises(ToolInputError, match="not found") as info:
        replace_in_file(path, Edit("b", "c"), can_write=allow_all)
    assert SweStyle().edit_failed(info.value, old="b") == (
        f"No replacement was performed: old_str `b` does not occur exactly as written anywhere "
        f"in {path}."
    )
    with pytest.raises(ToolInputError, match="identical") as same:
        replace_in_file(path, Edit("a", "a"), can_write=allow_all)
    assert same.value.kind == "no_change"


def test_crlf_preserved_with_lf_old_string(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    replace_in_file(path, Edit("one\ntwo", "uno\ndos"), can_write=allow_all)
    assert path.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_guard_refusal_leaves_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a\n")
    with pytest.raises(ToolInputError, match="read-only sandbox") as info:
        replace_in_file(path, Edit("a", "b"), can_write=deny_all)
    assert info.value.kind == "denied"
    assert path.read_text() == "a\n"


def test_sequential_edits_are_atomic(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a b c\n")
    with pytest.raises(ToolInputError):
        replace_in_file(path, [Edit("a", "x"), Edit("zzz", "y")], can_write=allow_all)
    assert path.read_text() == "a b c\n"
    result = replace_in_file(path, [Edit("a", "x"), Edit("x b", "y")], can_write=allow_all)
    assert path.read_text() == "y c\n" and result.replacements == 2


def test_empty_old_creates_missing_file_when_allowed(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    result = replace_in_file(
        path, Edit("", "print(1)\n"), can_write=allow_all, create_if_empty_old=True
    )
    assert result.created and path.read_text() == "print(1)\n"
    with pytest.raises(ToolInputError, match="must not be empty"):
        replace_in_file(path, Edit("", "x"), can_write=allow_all)


def test_permissions_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("echo a\n")
    path.chmod(0o755)
    replace_in_file(path, Edit("a", "b"), can_write=allow_all)
    assert os.stat(path).st_mode & 0o777 == 0o755


def test_binary_and_directory_refused(tmp_path: Path) -> None:
    blob = tmp_path / "b"
    blob.write_bytes(b"a\x00b")
    with pytest.raises(ToolInputError, match="binary"):
        replace_in_file(blob, Edit("a", "c"), can_write=allow_all)
    with pytest.raises(ToolInputError, match="directory"):
        replace_in_file(tmp_path, Edit("a", "c"), can_write=allow_all)


alphabet = st.text(alphabet="ab\n ", max_size=30)


@settings(max_examples=300, deadline=None)
@given(content=alphabet, old=st.text(alphabet="ab\n ", min_size=1, max_size=4), new=alphabet,
       replace_all=st.booleans())  # fmt: skip
def test_replace_matches_str_replace_semantics(
    content: str, old: str, new: str, replace_all: bool
) -> None:
    assume(old != new)
    count = content.count(old)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.txt"
        path.write_bytes(content.encode())
        try:
            result = replace_in_file(path, Edit(old, new, replace_all), can_write=allow_all)
        except ToolInputError as exc:
            assert count == 0 or (count > 1 and not replace_all)
            assert exc.kind == ("not_found" if count == 0 else "ambiguous")
            assert path.read_bytes() == content.encode()  # no partial write
            return
        written = path.read_bytes().decode()
    assert count == 1 or (count > 1 and replace_all)
    assert written == content.replace(old, new) == result.after
    assert result.replacements == count


@given(head=alphabet, tail=alphabet, body=st.text(alphabet="ab", max_size=3), new=alphabet)
def test_replace_text_pure_agrees(head: str, tail: str, body: str, new: str) -> None:
    old = "X" + body  # "X" appears nowhere else, so the match is unique
    content = head + old + tail
    assert replace_text(content, Edit(old, new)) == (head + new + tail, 1)
