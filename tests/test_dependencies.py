"""What the package imports is what pyproject declares, and nothing declared goes unused.

A module imported but not declared works only while some other dependency happens to pull it
in; a dependency declared and never imported is weight every install pays for.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"]:
        match = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert match is not None, requirement
        names.add(_normal(match.group(0)))
    return names


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "oiexec").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"oiexec", "__future__"}


def test_every_imported_distribution_is_declared_and_every_declared_one_imported() -> None:
    providers = metadata.packages_distributions()
    imported: dict[str, str] = {}
    for module in sorted(_imported_modules()):
        dists = providers.get(module)
        assert dists, f"oiexec imports {module!r}, which no installed distribution provides"
        imported[_normal(dists[0])] = module
    declared = _declared()
    missing = {dist: module for dist, module in imported.items() if dist not in declared}
    assert not missing, f"imported but not declared in pyproject's dependencies: {missing}"
    unused = declared - set(imported)
    assert not unused, f"declared in pyproject but never imported by oiexec: {sorted(unused)}"
