from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from oiexec.harness.agents_md import (
    discover_user_instructions,
    environment_context,
    project_doc_paths,
    read_global_doc,
    read_project_docs,
    render_user_instructions,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """outer/ (no git) > repo/ (git root) > pkg/ > sub/ (the cwd)."""
    repo = tmp_path / "outer" / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (tmp_path / "outer" / "AGENTS.md").write_text("above the root: never read")
    return cwd


def test_root_to_leaf_order_with_override_and_fallbacks(tree: Path) -> None:
    repo = tree.parent.parent
    (repo / "AGENTS.md").write_text("root doc\n")
    (repo / "AGENTS.override.md").write_text("root override\n")
    (repo / "pkg" / "TEAM.md").write_text("pkg fallback")
    (repo / "pkg" / "NOTES.md").write_text("second fallback: not used")
    (tree / "NOTES.md").write_text("leaf fallback")
    (tree / "AGENTS.md").mkdir()  # a directory is not a doc

    paths = project_doc_paths(tree, fallback_filenames=["TEAM.md", "NOTES.md"])
    assert paths == [
        repo / "AGENTS.override.md",
        repo / "pkg" / "TEAM.md",
        tree / "NOTES.md",
    ]
    docs = read_project_docs(tree, fallback_filenames=["TEAM.md", "NOTES.md"])
    assert docs == "root override\n\npkg fallback\n\nleaf fallback"
    # Without fallbacks, only AGENTS[.override].md count.
    assert read_project_docs(tree) == "root override"


def test_without_git_root_only_cwd_is_searched(tmp_path: Path) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    (tmp_path / "a" / "AGENTS.md").write_text("parent")
    assert read_project_docs(cwd) is None
    (cwd / "AGENTS.md").write_text("here")
    assert read_project_docs(cwd) == "here"


def test_byte_cap_applies_to_combined_docs_at_utf8_boundary(tree: Path) -> None:
    repo = tree.parent.parent
    (repo / "AGENTS.md").write_text("A" * 10)
    (tree / "AGENTS.md").write_text("é" * 10)  # 2 bytes each
    assert read_project_docs(tree, max_bytes=15) == "A" * 10 + "\n\n" + "éé"
    assert read_project_docs(tree, max_bytes=16) == "A" * 10 + "\n\n" + "ééé"
    assert read_project_docs(tree, max_bytes=10) == "A" * 10
    assert read_project_docs(tree, max_bytes=4) == "AAAA"
    assert read_project_docs(tree, max_bytes=0) is None


def test_global_override_and_rendering(tree: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert read_global_doc(home) is None
    assert discover_user_instructions(tree, home=home) is None

    (home / "AGENTS.md").write_text("global\n")
    assert read_global_doc(home) == "global"
    (home / "AGENTS.override.md").write_text("global override\n")
    assert read_global_doc(home) == "global override"

    (tree / "AGENTS.md").write_text("leaf")
    text = discover_user_instructions(tree, home=home)
    assert text == (
        f"# AGENTS.md instructions for {tree}\n\n<INSTRUCTIONS>\n"
        "global override\n\n--- project-doc ---\n\nleaf\n</INSTRUCTIONS>"
    )
    assert render_user_instructions(tree, None, "p") == (
        f"# AGENTS.md instructions for {tree}\n\n<INSTRUCTIONS>\np\n</INSTRUCTIONS>"
    )
    only_global = render_user_instructions(tree, "g", None)
    assert only_global is not None and "project-doc" not in only_global
    # The cap is for project docs only; the global doc is never cut.
    (home / "AGENTS.override.md").write_text("G" * 100)
    capped = discover_user_instructions(tree, home=home, max_bytes=2)
    assert capped is not None and "G" * 100 in capped and "\nle\n</INSTRUCTIONS>" in capped


def test_environment_context() -> None:
    now = datetime(2026, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    text = environment_context(
        cwd=Path("/work/a & b"),
        shell="/usr/bin/zsh",
        sandbox_mode="workspace-write",
        network_access=False,
        writable_roots=["/work/a & b", "/tmp"],
        now=now,
        timezone="America/New_York",
    )
    assert text == "\n".join(
        [
            "<environment_context>",
            "  <cwd>/work/a &amp; b</cwd>",
            "  <approval_policy>never</approval_policy>",
            "  <sandbox_mode>workspace-write</sandbox_mode>",
            "  <network_access>restricted</network_access>",
            "  <writable_roots>",
            "    <root>/work/a &amp; b</root>",
            "    <root>/tmp</root>",
            "  </writable_roots>",
            "  <shell>zsh</shell>",
            "  <current_date>2026-03-04</current_date>",
            "  <timezone>America/New_York</timezone>",
            "</environment_context>",
        ]
    )
    full = environment_context(
        cwd=Path("/w"), shell="bash", sandbox_mode="danger-full-access", network_access=True
    )
    assert "<network_access>enabled</network_access>" in full
    assert "writable_roots" not in full
    assert f"<current_date>{datetime.now().astimezone():%Y-%m-%d}</current_date>" in full
    assert "<timezone></timezone>" not in full
