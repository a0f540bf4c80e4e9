"""The README and docs/ link to each other and to files in the tree: every relative link must
name a file that exists, and every `#anchor` a heading of the page it points into, so a
newcomer following the README never lands on a 404 or at the top of the wrong page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {anchor(h) for h in _HEADING.findall(text)}


def test_the_readme_is_short_and_the_reference_lives_in_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    linked = {m for m in _LINK.findall(readme) if m.startswith("docs/")}
    pages = {f"docs/{p.name}" for p in PAGES[1:]}
    assert pages <= {link.split("#")[0] for link in linked}, "a docs page the README omits"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here (no network)
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.name}: " + "; ".join(broken)
