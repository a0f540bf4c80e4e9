"""Background task output files live in the shared /tmp, where a command of the same user
could plant a link: the runner creates them through a held directory fd, never following or
reusing an entry it did not make."""

from __future__ import annotations

import os
from pathlib import Path

from oiexec.tools.adapters.background import BackgroundTasks
from oiexec.tools.process import ProcessRegistry


def test_planted_link_is_not_followed(tmp_path: Path) -> None:
    tasks = BackgroundTasks(ProcessRegistry())
    directory = tasks._directory()
    victim = tmp_path / "pre-commit"
    victim.write_text("original\n")
    (directory / "b1.output").symlink_to(victim)
    assert tasks._open_output("b1.output") is None
    assert victim.read_text() == "original\n"
    fd = tasks._open_output("b2.output")
    assert fd is not None
    os.close(fd)
    tasks.close()


def test_directory_swapped_for_a_link_does_not_redirect(tmp_path: Path) -> None:
    tasks = BackgroundTasks(ProcessRegistry())
    directory = tasks._directory()
    elsewhere = tmp_path / "hooks"
    elsewhere.mkdir()
    directory.rename(tmp_path / "moved")
    directory.symlink_to(elsewhere)
    fd = tasks._open_output("b3.output")
    assert fd is not None
    os.close(fd)
    assert list(elsewhere.iterdir()) == []  # created in the original directory instead
    assert (tmp_path / "moved" / "b3.output").exists()
    directory.unlink()
    tasks.close()
