"""The `--diff` patch is bounded: a file too big for it is listed (named, with its size), not
inlined; the patch as a whole has a cap; what is inlined still applies with `git apply`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oiexec.output import diff as diff_module
from oiexec.output.diff import Baseline
from tests.output.test_diff import apply, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    (repo / "old.bin").write_bytes(b"\0" * 2048)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def test_an_oversized_file_is_listed_not_inlined(repo: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    subprocess.run(["git", "clone", "-q", str(repo), str(clean)], check=True)
    with Baseline.capture(repo) as baseline:
        (repo / "a.txt").write_text("two\n")
        with (repo / "big.bin").open("wb") as handle:
            handle.truncate(diff_module.MAX_FILE_BYTES + 1)  # sparse
        (repo / "old.bin").rename(repo / "renamed.bin")
        patch = baseline.diff_bytes()
        omitted = baseline.omitted
    assert len(patch) < 64 * 1024
    header = patch.split(b"diff --git", 1)[0].decode()
    assert f"big.bin (added, {diff_module.MAX_FILE_BYTES + 1} bytes)" in header
    assert "not inlined" in header
    assert [o.path for o in omitted] == ["big.bin"]
    assert b"diff --git a/big.bin" not in patch
    # The rest is a normal patch: the comment is skipped by git apply.
    apply(patch, clean)
    assert (clean / "a.txt").read_text() == "two\n"
    assert (clean / "renamed.bin").exists() and not (clean / "old.bin").exists()
    assert not (clean / "big.bin").exists()


def test_the_patch_as_a_whole_is_capped(repo: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    subprocess.run(["git", "clone", "-q", str(repo), str(clean)], check=True)
    with Baseline.capture(repo) as baseline:
        for index in range(10):
            (repo / f"f{index}.txt").write_bytes(os.urandom(3000).hex().encode())
        patch, omitted = diff_module.bounded_diff(
            baseline.work_tree,
            diff_module._git_prefix(baseline.work_tree, baseline.git_dir),
            baseline.tree,
            baseline.snapshot(),
            scratch=tmp_path,
            max_patch_bytes=40 * 1024,
        )
    assert len(patch) <= 40 * 1024
    assert omitted and all("cap" in o.why for o in omitted)
    inlined = patch.count(b"diff --git")
    assert inlined + len(omitted) == 10 and inlined > 0
    apply(patch, clean)
