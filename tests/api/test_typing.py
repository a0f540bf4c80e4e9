"""What a user's type checker sees of `from oiexec import ...` is checked by `mypy` from
.ci/run, not here (a strict mypy run inside the suite cost it some 45 s): typed_usage.py is
a user's code, in mypy's `files`, where a lazily loaded name degraded to Any or object, or a
misspelt name let through, is a mypy error. These tests keep that check wired up."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_typed_usage_sample_is_in_mypys_files() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert "tests/api/typed_usage.py" in config["files"]
    assert "oiexec" in config["files"]
    sample = (Path(__file__).parent / "typed_usage.py").read_text()
    # The two checks the sample stands for: a revealed type, and a misspelt name that is an
    # error (an unused ignore is itself an error under strict mypy).
    assert "assert_type(turn.exit_code, ExitCode)" in sample
    assert "oiexec.Agnet  # type: ignore[attr-defined]" in sample


def test_the_package_is_marked_typed_for_a_users_checker() -> None:
    # PEP 561: without the marker an installed oiexec is untyped to a user's mypy.
    assert resources.files("oiexec").joinpath("py.typed").is_file()
