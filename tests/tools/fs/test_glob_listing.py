from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles.claude import ClaudeStyle
from oiexec.harness.styles.qwen import QwenStyle
from oiexec.harness.styles.swe import SweStyle
from oiexec.tools import layout
from oiexec.tools.fs.glob import glob_files
from oiexec.tools.fs.globbing import expand_braces, glob_match
from oiexec.tools.fs.listing import list_directory


@pytest.fixture
def tree_dir(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for i, rel in enumerate(
        ["a.py", "src/b.py", "src/c.ts", "src/deep/d.py", "node_modules/m.py", ".cfg/h.py", "z.md"]
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    (root / ".gitignore").write_text("node_modules/\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def names(root: Path, paths: tuple[Path, ...]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def test_glob_patterns() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("a{b,{c,d}}") == ["ab", "ac", "ad"]
    assert glob_match("**/*.py", "x.py") and glob_match("**/*.py", "a/b/x.py")
    assert glob_match("src/**", "src/a/b") and not glob_match("src/**", "srcx/a")
    assert glob_match("*.py", "a/b/x.py")  # ripgrep: no slash -> any depth
    assert not glob_match("*.py", "a/b/x.py", basename_anywhere=False)
    assert glob_match("[!a]?.py", "bc.py") and not glob_match("[!a]?.py", "ac.py")


def test_glob_sorted_by_mtime_respecting_gitignore(tree_dir: Path) -> None:
    result = glob_files(tree_dir, "**/*.py")
    assert names(tree_dir, result.paths) == ["src/deep/d.py", "src/b.py", "a.py"]
    assert not result.truncated
    shell_style = glob_files(tree_dir, "*.py", basename_anywhere=False, sort="path")
    assert names(tree_dir, shell_style.paths) == ["a.py"]
    everything = glob_files(tree_dir, "*.py", respect_gitignore=False, include_hidden=True)
    assert "node_modules/m.py" in names(tree_dir, everything.paths)
    assert ".cfg/h.py" in names(tree_dir, everything.paths)


def test_glob_limit_dirs_and_render(tree_dir: Path) -> None:
    capped = glob_files(tree_dir, "**/*", limit=2, sort="mtime_asc")
    assert capped.truncated and capped.total == 5
    assert names(tree_dir, capped.paths) == ["a.py", "src/b.py"]
    assert ClaudeStyle().globbed(capped, pattern="**/*", root=tree_dir) == (
        f"{tree_dir / 'a.py'}\n{tree_dir / 'src/b.py'}\n"
        "(Results are truncated. Consider using a more specific path or pattern.)"
    )
    dirs = glob_files(tree_dir, "src*", include_dirs=True)
    assert names(tree_dir, dirs.paths) == ["src"]
    assert (
        ClaudeStyle().globbed(glob_files(tree_dir, "*.rs"), pattern="*.rs", root=tree_dir)
        == "No files found"
    )
    absolute = glob_files(tree_dir, str(tree_dir / "src" / "*.ts"))
    assert names(tree_dir, absolute.paths) == ["src/c.ts"]


def test_glob_errors(tree_dir: Path) -> None:
    with pytest.raises(ToolInputError, match="does not exist"):
        glob_files(tree_dir / "nope", "*")
    with pytest.raises(ToolInputError, match="not a directory"):
        glob_files(tree_dir / "a.py", "*")


def test_listing_and_renderers(tree_dir: Path) -> None:
    listing = list_directory(tree_dir, depth=3)
    assert [e.rel for e in listing.entries] == [
        "a.py", "src", "z.md", "src/b.py", "src/c.ts", "src/deep", "src/deep/d.py",
    ]  # fmt: skip
    assert QwenStyle().listed(list_directory(tree_dir)) == (
        f"Listed 3 item(s) in {tree_dir}:\n---\n[DIR] src\na.py\nz.md"
    )
    assert layout.tree(listing) == (
        "├── a.py\n├── src/\n│   ├── b.py\n│   ├── c.ts\n│   └── deep/\n│       └── d.py\n└── z.md"
    )
    two = list_directory(tree_dir, depth=2, ignore=["deep"])
    assert SweStyle().listed(two) == (
        f"Files and directories up to 2 levels deep in {tree_dir}, hidden items left out:\n"
        f"{tree_dir}\n{tree_dir}/a.py\n{tree_dir}/src\n{tree_dir}/src/b.py\n"
        f"{tree_dir}/src/c.ts\n{tree_dir}/z.md\n"
    )


def test_listing_limit_hidden_and_errors(tree_dir: Path) -> None:
    capped = list_directory(tree_dir, depth=2, limit=2)
    assert capped.truncated and len(capped.entries) == 2
    assert layout.tree(capped).endswith("more entries)")
    hidden = list_directory(tree_dir, include_hidden=True, respect_gitignore=False)
    assert {".cfg", ".gitignore", "node_modules"} <= {e.rel for e in hidden.entries}
    assert ".git" not in {e.rel for e in hidden.entries}
    with pytest.raises(ToolInputError, match="is a file"):
        list_directory(tree_dir / "a.py")
    with pytest.raises(ToolInputError, match="does not exist"):
        list_directory(tree_dir / "missing")


def test_gitignore_outside_a_work_tree_is_not_applied(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / ".gitignore").write_text("*.py\n")
    (tmp_path / "plain" / "x.py").write_text("")
    assert [e.rel for e in list_directory(tmp_path / "plain").entries] == ["x.py"]
