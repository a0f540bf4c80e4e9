from __future__ import annotations

import difflib
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.core.errors import ToolInputError
from oiexec.tools.apply_patch import (
    Chunk,
    UpdateFile,
    apply_hunks,
    apply_unified_diff,
    parse_unified_diff,
)


def allow_all(path: Path) -> str | None:
    return None


def deny_b(path: Path) -> str | None:
    return "b.txt is protected" if path.name == "b.txt" else None


def chunks(diff: str) -> tuple[Chunk, ...]:
    """The hunks of the first (updated) file of `diff`."""
    section = parse_unified_diff(diff).hunks[0]
    assert isinstance(section, UpdateFile)
    return section.chunks


def udiff(before: str, after: str, name: str = "f.txt", n: int = 3) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), f"a/{name}", f"b/{name}", n=n
        )
    )


def test_multi_file_add_update_delete(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    diff = (
        "diff --git a/a.txt b/a.txt\n"
        + udiff("one\ntwo\nthree\n", "one\n2\nthree\n", "a.txt")
        + "--- /dev/null\n+++ b/new/n.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
        + "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    )
    changes = apply_unified_diff(diff, root=tmp_path, can_write=allow_all)
    assert [(c.path.name, c.kind) for c in changes] == [
        ("a.txt", "update"), ("n.txt", "add"), ("gone.txt", "delete"),
    ]  # fmt: skip
    assert (tmp_path / "a.txt").read_text() == "one\n2\nthree\n"
    assert (tmp_path / "new" / "n.txt").read_text() == "hello\nworld\n"
    assert not (tmp_path / "gone.txt").exists()


def test_all_or_nothing_when_a_hunk_misfits_or_guard_refuses(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    diff = udiff("a\n", "A\n", "a.txt") + udiff("zzz\n", "B\n", "b.txt")
    with pytest.raises(ToolInputError, match="Hunk 1 does not apply") as info:
        apply_unified_diff(diff, root=tmp_path, can_write=allow_all)
    assert info.value.kind == "patch_failed"
    assert (tmp_path / "a.txt").read_text() == "a\n"
    good = udiff("a\n", "A\n", "a.txt") + udiff("b\n", "B\n", "b.txt")
    with pytest.raises(ToolInputError, match=r"b\.txt is protected"):
        apply_unified_diff(good, root=tmp_path, can_write=deny_b)
    assert (tmp_path / "a.txt").read_text() == "a\n"


def test_offset_and_fuzz(tmp_path: Path) -> None:
    base = "".join(f"l{i}\n" for i in range(20))
    changed = base.replace("l10\n", "TEN\n")
    hunks = chunks(udiff(base, changed))
    shifted = "new0\nnew1\nnew2\n" + base
    out, reports = apply_hunks(shifted, hunks)
    assert out == "new0\nnew1\nnew2\n" + changed and reports[0].offset == 3
    # Context drifted at both ends: only fuzz can place it.
    drifted = shifted.replace("l7\n", "L7\n").replace("l13\n", "L13\n")
    with pytest.raises(ToolInputError):
        apply_hunks(drifted, hunks)
    out, reports = apply_hunks(drifted, hunks, fuzz=1)
    assert "TEN\n" in out and "l10\n" not in out and reports[0].fuzz == 1


def test_whitespace_relaxed_with_fuzz() -> None:
    hunks = chunks("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a  \n-b\n+c\n")
    assert apply_hunks("a\nb\n", hunks, fuzz=1)[0] == "a\nc\n"


def test_no_newline_markers_and_crlf() -> None:
    diff = (
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
        "\\ No newline at end of file\n"
    )
    assert apply_hunks("a\nb", chunks(diff))[0] == "a\nc"
    add_newline = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n\\ No newline at end of file\n+b\n"
    assert apply_hunks("b", chunks(add_newline))[0] == "b\n"
    crlf = chunks("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
    assert apply_hunks("a\r\nb\r\n", crlf)[0] == "a\r\nc\r\n"


def test_wrong_counts_and_bare_hunk_headers() -> None:
    wrong = "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n-b\n+c\n d\n"
    assert apply_hunks("a\nb\nd\n", chunks(wrong))[0] == "a\nc\nd\n"
    bare = "--- x\n+++ x\n@@ @@\n b\n-c\n+C\n"
    assert apply_hunks("a\nb\nc\n", chunks(bare))[0] == "a\nb\nC\n"


def test_malformed_input_is_explained() -> None:
    with pytest.raises(ToolInputError, match="No file headers"):
        parse_unified_diff("just prose")
    with pytest.raises(ToolInputError, match="before any"):
        parse_unified_diff("@@ -1 +1 @@\n-a\n+b\n")


def test_creating_an_existing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("here\n")
    diff = "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n"
    with pytest.raises(ToolInputError, match="already exists"):
        apply_unified_diff(diff, root=tmp_path, can_write=allow_all)


def test_rename_with_edit(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("a\nb\n")
    diff = "--- a/old.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    [change] = apply_unified_diff(diff, root=tmp_path, can_write=allow_all)
    assert change.path == tmp_path / "old.txt" and change.move_path == tmp_path / "new.txt"
    assert not (tmp_path / "old.txt").exists() and (tmp_path / "new.txt").read_text() == "a\nB\n"


line = st.sampled_from(["alpha", "beta", "gamma", "", "  x", "def f():", "return 1", "}"])


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    before = draw(st.lists(line, max_size=25))
    after = list(before)
    for _ in range(draw(st.integers(0, 5))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        if op == "insert" or not after:
            after.insert(draw(st.integers(0, len(after))), draw(line))
        elif op == "delete":
            after.pop(draw(st.integers(0, len(after) - 1)))
        else:
            after[draw(st.integers(0, len(after) - 1))] = draw(line)
    return before, after


@settings(max_examples=200, deadline=None)
@given(pair=edited(), context=st.integers(0, 3))
def test_difflib_diffs_apply_back_exactly(pair: tuple[list[str], list[str]], context: int) -> None:
    before = "".join(x + "\n" for x in pair[0])
    after = "".join(x + "\n" for x in pair[1])
    diff = udiff(before, after, n=context)
    if not diff:
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_text(before)
        apply_unified_diff(diff, root=root, can_write=allow_all, fuzz=0)
        assert (root / "f.txt").read_text() == after
