from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles.claude import ClaudeStyle
from oiexec.harness.styles.opencode import OpencodeStyle
from oiexec.tools import layout
from oiexec.tools.fs.grep import GrepQuery, grep

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    files = {
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()  # TODO fix\n",
        "src/util.py": "def helper():\n    pass\n# todo: later\n",
        "src/a.py": "TODO first\n",
        "src/a/b.py": "TODO nested\n",
        "docs/readme.md": "TODO: write docs\nmore\n",
        "build/out.py": "TODO generated\n",
        "notes.log": "TODO in a log\n",
        ".hidden/secret.py": "TODO hidden\n",
        "pkg/.gitignore": "local.py\n",
        "pkg/local.py": "TODO local ignore\n",
        "pkg/kept.py": "TODO kept\r\nline two\r\n",
        "multi.txt": "start here\nmiddle\nend here\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    (root / "blob.bin").write_bytes(b"TODO\x00binary")
    (root / ".gitignore").write_text("build/\n*.log\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def both(query: GrepQuery) -> tuple[object, object]:
    fast = grep(query, use_rg=True)
    slow = grep(query, use_rg=False)
    assert fast.backend == "rg" and slow.backend == "python"
    return (fast.files, fast.lines, fast.counts, fast.total), (
        slow.files,
        slow.lines,
        slow.counts,
        slow.total,
    )


def rel(root: Path, paths: tuple[Path, ...]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def test_python_fallback_files_mode(repo: Path) -> None:
    result = grep(GrepQuery("TODO", repo), use_rg=False)
    assert rel(repo, result.files) == [
        "docs/readme.md", "pkg/kept.py", "src/a/b.py", "src/a.py", "src/app.py",
    ]  # fmt: skip
    assert ClaudeStyle().grepped(result).startswith("Found 5 files\n")


def test_python_fallback_content_with_context(repo: Path) -> None:
    q = GrepQuery("getcwd", repo / "src", output_mode="content", context=1)
    result = grep(q, use_rg=False)
    app = repo / "src" / "app.py"
    assert layout.rg_lines(result) == (
        f"{app}-3-def main():\n{app}:4:    return os.getcwd()  # TODO fix"
    )


QUERIES = [
    dict(pattern="TODO"),
    dict(pattern="todo", case_insensitive=True),
    dict(pattern="TODO", output_mode="content"),
    dict(pattern="TODO", output_mode="content", before=1, after=2),
    dict(pattern="o", output_mode="count"),
    dict(pattern="o", output_mode="count", count_matches=True),
    dict(pattern="TODO", glob="*.md"),
    dict(pattern="TODO", glob="src/**"),
    dict(pattern="TODO", glob="!src/**"),
    dict(pattern="TODO", file_type="py"),
    dict(pattern="TODO", include_hidden=True),
    dict(pattern="TODO", include_ignored=True),
    dict(pattern="TODO", include_ignored=True, include_hidden=True, output_mode="content"),
    dict(pattern=r"start.*\n.*end", multiline=True, output_mode="content"),
    dict(pattern=r"^\s+return", output_mode="content"),
    dict(pattern="TODO", head_limit=2, offset=1),
    dict(pattern="TODO", output_mode="content", head_limit=3),
    dict(pattern="nothing-matches-this"),
]


@needs_rg
@pytest.mark.parametrize("kwargs", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
def test_ripgrep_and_fallback_agree(repo: Path, kwargs: dict[str, object]) -> None:
    fast, slow = both(GrepQuery(path=repo, **kwargs))  # type: ignore[arg-type]
    assert fast == slow


@needs_rg
def test_a_single_file_is_searched_through_the_reader(repo: Path) -> None:
    # ripgrep would follow a link in the file's name; one file is searched in-process.
    query = GrepQuery("TODO", repo / "notes.log", output_mode="content")
    fast, slow = grep(query, use_rg=True), grep(query, use_rg=False)
    assert fast.backend == slow.backend == "python"
    assert fast.lines and fast.lines == slow.lines


@needs_rg
def test_ripgrep_results_respect_gitignore_and_hidden(repo: Path) -> None:
    result = grep(GrepQuery("TODO", repo), use_rg=True)
    names = rel(repo, result.files)
    assert "build/out.py" not in names and "notes.log" not in names
    assert "pkg/local.py" not in names and ".hidden/secret.py" not in names
    assert "blob.bin" not in names


def test_errors(repo: Path) -> None:
    with pytest.raises(ToolInputError, match="does not exist"):
        grep(GrepQuery("x", repo / "nope"), use_rg=False)
    with pytest.raises(ToolInputError, match="Invalid regular expression"):
        grep(GrepQuery("(", repo), use_rg=False)
    with pytest.raises(ToolInputError, match="Unrecognized file type"):
        grep(GrepQuery("x", repo, file_type="nosuchtype"), use_rg=False)


@needs_rg
def test_ripgrep_errors_become_input_errors(repo: Path) -> None:
    with pytest.raises(ToolInputError, match="grep failed"):
        grep(GrepQuery("(", repo), use_rg=True)


def test_grep_renderers(repo: Path) -> None:
    content = grep(GrepQuery("TODO", repo / "src", output_mode="content"), use_rg=False)
    app, a = repo / "src" / "app.py", repo / "src" / "a.py"
    opencode = OpencodeStyle().grepped(content)
    assert opencode.startswith("Found 3 matches\n\n")
    assert f"{a}:\n  Line 1: TODO first" in opencode
    assert f"{app}:\n  Line 4:     return os.getcwd()  # TODO fix" in opencode
    counts = grep(GrepQuery("o", repo / "src", output_mode="count"), use_rg=False)
    assert ClaudeStyle().grepped(counts).endswith("Found 3 total occurrences across 2 files.")
    none = grep(GrepQuery("zzz", repo), use_rg=False)
    assert ClaudeStyle().grepped(none) == "No files found"
    assert OpencodeStyle().grepped(none) == "No files found"
