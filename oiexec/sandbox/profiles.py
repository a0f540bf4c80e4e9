"""Locate and load the policy data in `sandbox_profiles/` (readable TOML, not code)."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

#: The `oiexec` package's directory (this module's grandparent): named without importing the
#: package root, which re-exports the API from the top of the layers.
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def profiles_dir() -> Path:
    """The `sandbox_profiles/` folder of a checkout, else the copy packed into the wheel."""
    for candidate in (
        _PACKAGE_DIR.parent / "sandbox_profiles",
        _PACKAGE_DIR / "_data" / "sandbox_profiles",
    ):
        if (candidate / "policy.toml").is_file():
            return candidate
    raise FileNotFoundError("sandbox_profiles/policy.toml is missing from this installation")


@cache
def load(relative: str) -> dict[str, Any]:
    """One TOML file of `sandbox_profiles/`, e.g. `linux/seccomp.toml`."""
    with (profiles_dir() / relative).open("rb") as handle:
        return tomllib.load(handle)


def read_text(relative: str) -> str:
    return (profiles_dir() / relative).read_text(encoding="utf-8")


def policy_data() -> dict[str, Any]:
    return load("policy.toml")


def protected_names() -> tuple[str, ...]:
    return tuple(str(name) for name in policy_data()["protected_names"])
