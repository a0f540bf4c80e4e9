"""Skills: `SKILL.md` folders with a name and a description in their front matter, found in
the project (trusted only) and the user's skill directories.

Where they are looked for, highest precedence first (a name found twice keeps the first):
`.agents/skills` in every folder from the working directory up to the project root (only in a
trusted project: a repository cannot hand the model instructions the user never vouched
for), `$OPENINTERPRETER_HOME/skills`, then `~/.agents/skills`.

A skill is a folder holding `SKILL.md`, whose YAML front matter has a `name` (at most 64
characters) and a `description` (at most 1024), as the Agent Skills convention and Codex
require. A file that breaks these rules is skipped with a warning naming it; the run goes on.
Only the front matter is read here: the model opens the body when it uses the skill.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Skill", "discover_skills", "skill_roots"]

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
#: How deep below a root a `SKILL.md` is looked for (skills grouped in sub-folders).
MAX_DEPTH = 6
#: Front matter larger than this is not a skill header (and must not stall start-up).
MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    #: The skill's SKILL.md (the model reads it when it uses the skill).
    path: Path


def skill_roots(
    cwd: Path, project_root: Path, *, trusted: bool, home: Path, user_home: Path
) -> list[Path]:
    """The skill directories of a run, highest precedence first (existing or not)."""
    roots: list[Path] = []
    if trusted:
        current = cwd.resolve()
        top = project_root.resolve()
        while True:
            roots.append(current / ".agents" / "skills")
            if current == top or current.parent == current or top not in current.parents:
                break
            current = current.parent
    roots.append(home / "skills")
    roots.append(user_home / ".agents" / "skills")
    seen: set[Path] = set()
    unique = []
    for root in roots:
        if root not in seen:
            seen.add(root)
            unique.append(root)
    return unique


def discover_skills(roots: list[Path], warn: Callable[[str], None]) -> tuple[Skill, ...]:
    """The skills under `roots`. Costs one `stat` per root when none of them exists."""
    found: dict[str, Skill] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in _skill_files(root):
            skill = _read_skill(path, warn)
            if skill is None:
                continue
            if skill.name in found:
                # The same name further down the precedence order is shadowed, as in Codex.
                continue
            found[skill.name] = skill
    return tuple(found.values())


def _skill_files(root: Path) -> Iterator[Path]:
    """Every `SKILL.md` below `root`, sorted, not looking inside a skill's own folder nor in
    hidden folders."""
    base_depth = len(root.parts)
    for directory, subdirs, files in os.walk(root, followlinks=True):
        here = Path(directory)
        if SKILL_FILE in files:
            subdirs[:] = []
            yield here / SKILL_FILE
            continue
        if len(here.parts) - base_depth >= MAX_DEPTH:
            subdirs[:] = []
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))


def _read_skill(path: Path, warn: Callable[[str], None]) -> Skill | None:
    def skip(why: str) -> None:
        warn(f"skill {path} skipped: {why}")

    try:
        head = _read_head(path)
    except OSError as exc:
        skip(f"cannot be read ({exc.strerror or exc})")
        return None
    if head is None:
        skip("it is not a regular file")
        return None
    text = head.decode("utf-8", errors="replace")
    header = _front_matter(text)
    if header is None:
        skip("it must start with YAML front matter between `---` lines giving name and description")
        return None
    try:
        import yaml
    except ImportError:  # pragma: no cover - a dependency of the package
        skip("reading skills needs the PyYAML package (pip install pyyaml)")
        return None
    try:
        data = yaml.safe_load(header)
    except yaml.YAMLError as exc:
        skip(f"its front matter is not valid YAML ({_first_line(str(exc))})")
        return None
    if not isinstance(data, dict):
        skip("its front matter must be a mapping with `name` and `description`")
        return None
    name = _single_line(data.get("name"))
    description = _single_line(data.get("description"))
    if not name:
        skip("the front matter has no `name`")
        return None
    if not description:
        skip("the front matter has no `description`")
        return None
    if len(name) > MAX_NAME_CHARS:
        skip(f"`name` is longer than {MAX_NAME_CHARS} characters")
        return None
    if len(description) > MAX_DESCRIPTION_CHARS:
        skip(f"`description` is longer than {MAX_DESCRIPTION_CHARS} characters")
        return None
    return Skill(name=name, description=description, path=path.absolute())


def _read_head(path: Path) -> bytes | None:
    """The first MAX_HEADER_BYTES of a regular file; None for anything else (a FIFO named
    SKILL.md must not stall the run's start, nor a link to /proc hand the model the runner's
    environment). Read through the runner's one reader; skill folders linked in from
    elsewhere are common, so links are followed (the roots are the user's or a trusted
    project's)."""
    from oiexec.sandbox.reader import ReadRefused, ReadScope, read_file

    try:
        return read_file(ReadScope(), path, max_bytes=MAX_HEADER_BYTES, truncate=True).data
    except ReadRefused as exc:
        if exc.kind in ("special", "is_directory"):
            return None
        raise


def _front_matter(text: str) -> str | None:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "\n".join(lines[1:index])
    return None


def _single_line(value: object) -> str:
    """A scalar as one line (a folded description may span lines in YAML)."""
    if value is None or isinstance(value, dict | list):
        return ""
    return " ".join(str(value).split())


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
