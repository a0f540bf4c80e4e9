"""The one rule for programs the runner starts outside the sandbox (oiexec.core.programs): a
name is found once, from absolute PATH entries outside every untrusted root (or config), and
what config asks to start is refused when it lies in one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oiexec.core import programs
from oiexec.core.errors import ConfigError


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test resolves from its own PATH and roots; the process's own state comes back after.
    monkeypatch.setattr(programs, "_STATE", programs._State())


def _program(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_entries_inside_untrusted_roots_and_relative_ones_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, system = tmp_path / "ws", tmp_path / "system"
    _program(ws / ".venv" / "bin", "git")
    _program(ws / "rel", "git")
    real = _program(system, "git")
    (tmp_path / "link").symlink_to(ws / ".venv" / "bin")  # a trusted-looking name for it
    monkeypatch.chdir(ws)
    path = os.pathsep.join(["rel", str(tmp_path / "link"), str(ws / ".venv" / "bin"), str(system)])
    monkeypatch.setenv("PATH", path)
    programs.distrust([ws])
    found = programs.resolve("git")
    assert found.path == str(real) and found.source == "PATH"
    assert found.skipped == (
        "rel (relative)",
        f"{tmp_path / 'link'} (inside {ws})",
        f"{ws / '.venv' / 'bin'} (inside {ws})",
    )


def test_a_trusted_dirs_link_into_the_workspace_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, system = tmp_path / "ws", tmp_path / "system"
    planted = _program(ws, "rg")
    system.mkdir()
    (system / "rg").symlink_to(planted)
    monkeypatch.setenv("PATH", str(system))
    programs.distrust([ws])
    assert programs.find("rg") is None


def test_a_name_is_resolved_once_and_never_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, later = tmp_path / "first", tmp_path / "later"
    expected = _program(first, "git")
    monkeypatch.setenv("PATH", os.pathsep.join([str(later), str(first)]))
    programs.distrust([tmp_path / "ws"])
    assert programs.find("git") == str(expected)
    _program(later, "git")  # appears earlier on PATH afterwards: not looked up again
    assert programs.find("git") == str(expected)
    # Distrusting forgets (only the run's start does it): the new roots apply at once.
    programs.distrust([first])
    assert programs.find("git") == str(later / "git")


def test_before_any_run_the_current_directory_is_untrusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _program(tmp_path / "bin", "git")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert programs.find("git") is None
    assert programs.resolve("git").skipped == (f"{tmp_path / 'bin'} (inside {tmp_path})",)


def test_config_paths_must_be_absolute_executable_and_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    inside = _program(ws, "git")
    outside = _program(tmp_path / "opt", "git")
    programs.distrust([ws])
    with pytest.raises(ConfigError, match=r"program_paths\.git = 'git' is not an absolute path"):
        programs.use_paths({"git": "git"})
    with pytest.raises(ConfigError, match="is not an executable file"):
        programs.use_paths({"git": str(tmp_path / "missing")})
    with pytest.raises(ConfigError, match=f"lies inside {ws}, which sandboxed commands"):
        programs.use_paths({"git": str(inside)})
    monkeypatch.setenv("PATH", "")
    programs.use_paths({"git": str(outside)})
    assert programs.resolve("git") == programs.Resolution("git", str(outside), "config")


def test_judge_program_names_where_a_refused_program_lies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, system = tmp_path / "ws", tmp_path / "system"
    _program(ws / "ci", "guard.sh")
    _program(ws / ".venv" / "bin", "python")
    good = _program(system, "python")
    programs.distrust([ws])
    path, why = programs.judge_program("./ci/guard.sh", cwd=ws, path_value=str(system))
    assert path is None and why is not None
    assert why.startswith(f"`./ci/guard.sh` lies inside {ws}, which sandboxed commands")
    venv_first = os.pathsep.join([str(ws / ".venv" / "bin"), str(system)])
    path, why = programs.judge_program("python", cwd=ws, path_value=venv_first)
    assert path is None and why is not None
    assert f"found first in {ws / '.venv' / 'bin' / 'python'}, inside {ws}" in why
    relative = os.pathsep.join([".venv/bin", str(system)])
    assert f"inside {ws} (the relative PATH entry `.venv/bin`)" in str(
        programs.judge_program("python", cwd=ws, path_value=relative)[1]
    )
    assert programs.judge_program("python", cwd=ws, path_value=str(system)) == (str(good), None)
    assert programs.judge_program("nothing", cwd=ws, path_value=str(system)) == (None, None)


def test_trusted_path_value_drops_what_commands_could_write(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    programs.distrust([ws])
    value = os.pathsep.join([str(ws / "bin"), "bin", "", "/usr/bin", "/bin"])
    assert programs.trusted_path_value(value) == os.pathsep.join(["/usr/bin", "/bin"])


def test_a_link_on_the_way_through_an_untrusted_root_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /opt/bin/git -> ws/hop -> system/git: the program is outside, but the link in the
    # workspace can be pointed elsewhere after it was judged.
    ws, system, opt = tmp_path / "ws", tmp_path / "system", tmp_path / "opt"
    real = _program(system, "git")
    ws.mkdir()
    (ws / "hop").symlink_to(real)
    opt.mkdir()
    (opt / "git").symlink_to(ws / "hop")
    (tmp_path / "linked-bin").symlink_to(ws)  # a directory entry reached through a link
    monkeypatch.setenv("PATH", os.pathsep.join([str(opt), str(system)]))
    programs.distrust([ws])
    assert programs.find("git") == str(real)
    assert programs.untrusted_holder(opt / "git") == ws.resolve()
    assert programs.untrusted_holder(tmp_path / "linked-bin" / "x") == ws.resolve()
    assert programs.untrusted_holder(real) is None
