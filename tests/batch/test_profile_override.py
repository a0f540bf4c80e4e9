"""`batch run -c profile=NAME` selects the profile for the ceiling as `-p NAME` does (each
task's `interpreter exec` gets the same `-c`, and selects it too: the loader's rule, tested
in tests/config/test_parsing_bounds.py)."""

from __future__ import annotations

from pathlib import Path

from oiexec.runner.batch.ceiling import Ceiling
from oiexec.runner.batch.tasks import Task
from oiexec.runner.request import new_request

_PROFILES = """
[profiles.tight]
sandbox_mode = "read-only"

[profiles.open]
sandbox_mode = "danger-full-access"
"""


def test_c_profile_sets_the_ceiling_as_p_does(tmp_path: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text(_PROFILES)
    wide = Task(index=0, id="a", prompt="x", sandbox="workspace-write")
    for selected in ({"overrides": ("profile=tight",)}, {"profile": "tight"}):
        ceiling = Ceiling(new_request("", cwd=tmp_path, cwd_name="--cd", **selected))
        assert ceiling.policy.mode == "read-only"
        [problem] = ceiling.problems(wide)
        assert problem.startswith("`sandbox` 'workspace-write' loosens")
    opened = Ceiling(new_request("", cwd=tmp_path, cwd_name="--cd", overrides=("profile=open",)))
    assert opened.policy.mode == "danger-full-access"
    assert opened.problems(Task(index=0, id="a", prompt="x", sandbox="danger-full-access")) == []
