"""Reading SKILL.md files: the front matter rules, and where skills are looked for."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from oiexec.extensions.skills import discover_skills, skill_roots


def _skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_front_matter_rules(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    folded = _skill(
        root, "folded", "---\nname: folded\ndescription: >\n  Spans\n  two lines\n---\nbody\n"
    )
    _skill(root, "nested/deeper", "---\nname: deep\ndescription: Found below a group\n---\n")
    cases = {
        "no-header": "# Just markdown\n",
        "unclosed": "---\nname: x\ndescription: y\n",
        "bad-yaml": "---\nname: [unclosed\n---\n",
        "long-name": f"---\nname: {'n' * 65}\ndescription: d\n---\n",
        "long-description": f"---\nname: ld\ndescription: {'d' * 1025}\n---\n",
        "list": "---\n- a\n---\n",
    }
    for folder, text in cases.items():
        _skill(root, folder, text)
    _skill(root, ".hidden", "---\nname: hidden\ndescription: never listed\n---\n")
    warnings: list[str] = []
    skills = discover_skills([root], warnings.append)
    assert {s.name: s.description for s in skills} == {
        "folded": "Spans two lines",
        "deep": "Found below a group",
    }
    assert next(s.path for s in skills if s.name == "folded") == folded
    assert len(warnings) == len(cases)
    for folder in cases:
        assert any(f"{root / folder / 'SKILL.md'} skipped" in w for w in warnings), folder
    assert any("longer than 64 characters" in w for w in warnings)
    assert any("longer than 1024 characters" in w for w in warnings)


def test_a_name_found_twice_keeps_the_higher_precedence_one(tmp_path: Path) -> None:
    first = _skill(tmp_path / "a", "x", "---\nname: same\ndescription: project\n---\n")
    _skill(tmp_path / "b", "x", "---\nname: same\ndescription: user\n---\n")
    skills = discover_skills([tmp_path / "a", tmp_path / "b"], lambda _: None)
    assert [(s.description, s.path) for s in skills] == [("project", first)]


def test_roots_from_the_cwd_up_to_the_project_root_only_when_trusted(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    cwd = project / "pkg" / "sub"
    cwd.mkdir(parents=True)
    home, user = tmp_path / "oi", tmp_path / "user"
    trusted = skill_roots(cwd, project, trusted=True, home=home, user_home=user)
    assert trusted == [
        cwd / ".agents" / "skills",
        project / "pkg" / ".agents" / "skills",
        project / ".agents" / "skills",
        home / "skills",
        user / ".agents" / "skills",
    ]
    untrusted = skill_roots(cwd, project, trusted=False, home=home, user_home=user)
    assert untrusted == [home / "skills", user / ".agents" / "skills"]
    assert discover_skills(untrusted, lambda _: None) == ()  # none of them exists


def test_a_skill_file_that_is_not_a_regular_file_is_skipped_without_waiting(
    tmp_path: Path,
) -> None:
    root = tmp_path / "skills"
    (root / "pipe").mkdir(parents=True)
    os.mkfifo(root / "pipe" / "SKILL.md")  # opening it for reading would wait for a writer
    _skill(root, "real", "---\nname: real\ndescription: still found\n---\n")
    warnings: list[str] = []
    found: list[str] = []
    worker = threading.Thread(
        target=lambda: found.extend(s.name for s in discover_skills([root], warnings.append)),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a hang guard, not a timing check: the fixed code returns at once
    assert not worker.is_alive(), "discovering skills waited on a FIFO"
    assert found == ["real"]
    assert warnings == [f"skill {root / 'pipe' / 'SKILL.md'} skipped: it is not a regular file"]
