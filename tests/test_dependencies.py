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
    """The dotted names oiexec imports, outside the standard library and itself."""
    found: set[str] = set()
    for path in (ROOT / "oiexec").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    skip = set(sys.stdlib_module_names) | {"oiexec", "__future__"}
    return {name for name in found if name.split(".")[0] not in skip}


def _distribution(module: str, providers: dict[str, list[str]]) -> str:
    """The distribution that provides `module`. A namespace package (`opentelemetry`) is
    provided by several: the one whose files hold the module's own package or file."""
    dists = providers.get(module.split(".")[0])
    assert dists, f"oiexec imports {module!r}, which no installed distribution provides"
    if len(dists) == 1:
        return dists[0]
    parts = module.split(".")
    for depth in range(len(parts), 1, -1):
        stem = "/".join(parts[:depth])
        owners = [
            dist
            for dist in dists
            if any(
                str(file) in (f"{stem}/__init__.py", f"{stem}.py")
                for file in metadata.files(dist) or ()
            )
        ]
        if owners:
            return owners[0]
    return dists[0]


def test_every_imported_distribution_is_declared_and_every_declared_one_imported() -> None:
    providers = metadata.packages_distributions()
    imported: dict[str, str] = {}
    for module in sorted(_imported_modules()):
        imported[_normal(_distribution(module, providers))] = module
    declared = _declared()
    missing = {dist: module for dist, module in imported.items() if dist not in declared}
    assert not missing, f"imported but not declared in pyproject's dependencies: {missing}"
    unused = declared - set(imported)
    assert not unused, f"declared in pyproject but never imported by oiexec: {sorted(unused)}"
