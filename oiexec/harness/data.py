"""Where the shipped data folders (`harnesses/`, `sandbox_profiles/`) live.

In a source checkout or editable install they sit next to the package; in a wheel they are
packed as `oiexec/_data/<name>`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import oiexec
from oiexec.errors import ConfigError

_PACKAGE_DIR = Path(oiexec.__file__).resolve().parent


def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE_DIR.parent / name, _PACKAGE_DIR / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"oiexec data folder `{name}` is missing from this installation")


def harness_dir(harness_id: str) -> Path:
    path = data_dir("harnesses") / harness_id
    if not (path / "harness.toml").is_file():
        available = sorted(
            p.name for p in data_dir("harnesses").iterdir() if (p / "harness.toml").is_file()
        )
        raise ConfigError(
            f"unknown harness `{harness_id}`",
            hint=f"Available harnesses: {', '.join(available)}.",
        )
    return path


@cache
def load_manifest(harness_id: str) -> dict[str, Any]:
    with (harness_dir(harness_id) / "harness.toml").open("rb") as handle:
        return tomllib.load(handle)
