from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from oiexec.output.diff import Baseline

_IDENT = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", *_IDENT, *args], cwd=repo, capture_output=True, check=True, input=input
    )
    return done.stdout.decode()


def files(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under root (outside .git) with its bytes."""
    out: dict[str, bytes] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == ".git" or rel in skip or not path.is_file():
            continue
        out[rel] = path.read_bytes()
    return out


def apply(patch: bytes, target: Path) -> None:
    subprocess.run(["git", "apply", "--check", "-"], cwd=target, input=patch, check=True)
    subprocess.run(["git", "apply", "-"], cwd=target, input=patch, check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "dir").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\ntwo\nthree\n")
    (repo / "bin.dat").write_bytes(bytes(range(256)) * 8)
    (repo / "old name.txt").write_text("a file that will be renamed\n" * 20)
    (repo / "del.txt").write_text("delete me\n")
    (repo / "dir" / "ü file.txt").write_text("unicode name\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def _edit(repo: Path) -> None:
    (repo / "a.txt").write_text("one\n2\nthree\nfour\n")
    (repo / "bin.dat").write_bytes(bytes(reversed(range(256))) * 8 + b"\x00tail")
    (repo / "old name.txt").rename(repo / "dir" / "new näme.txt")
    (repo / "del.txt").unlink()
    (repo / "dir" / "ü file.txt").write_text("unicode name, edited\n")
    (repo / "brand new.bin").write_bytes(b"\x00\xff\x10" * 100)
    (repo / "run.log").write_text("ignored\n")


def test_patch_applies_to_a_fresh_clone(repo: Path, tmp_path: Path) -> None:
    baseline = Baseline.capture(repo / "dir")  # a subdirectory still snapshots the repo
    _edit(repo)
    patch = baseline.diff_bytes()
    baseline.close()

    text = patch.decode("utf-8")
    assert "GIT binary patch" in text
    assert "rename from old name.txt" in text
    assert "deleted file mode" in text
    assert "run.log" not in text

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    apply(patch, clone)
    assert files(clone) == files(repo, skip=("run.log",))


def test_only_changes_after_capture_and_user_index_untouched(repo: Path, tmp_path: Path) -> None:
    # Dirty start: a staged change, an unstaged change on top, an untracked file.
    (repo / "a.txt").write_text("one\nstaged\nthree\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("one\nstaged\nthree\nunstaged\n")
    (repo / "untracked.txt").write_text("was here before\n")
    start = tmp_path / "start"
    shutil.copytree(repo, start)

    index_before = (repo / ".git" / "index").read_bytes()
    cached_before = git(repo, "diff", "--cached")
    head_before = git(repo, "rev-parse", "HEAD")
    status_before = git(repo, "status", "--porcelain")

    with Baseline.capture(repo) as baseline:
        assert baseline.diff() == ""
        (repo / "untracked.txt").write_text("was here before\nand changed\n")
        (repo / "a.txt").write_text("one\nstaged\nthree\nunstaged\nagent\n")
        (repo / "new.txt").write_text("agent file\n")
        patch = baseline.diff_bytes()
        assert baseline.diff_bytes() == patch  # repeatable

    text = patch.decode()
    assert "+agent\n" in text and "+and changed\n" in text
    assert "-two" not in text and "+staged" not in text  # pre-existing state is the base

    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "diff", "--cached") == cached_before
    assert git(repo, "rev-parse", "HEAD") == head_before
    assert git(repo, "stash", "list") == ""
    assert "A  new.txt" not in git(repo, "status", "--porcelain")
    assert git(repo, "status", "--porcelain").startswith(status_before.splitlines()[0])

    apply(patch, start)
    assert files(start) == files(repo)


def test_outside_a_repository_uses_a_throwaway_git_dir(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    (work / "sub").mkdir(parents=True)
    (work / "keep.txt").write_text("keep\n")
    (work / "sub" / "gone.txt").write_text("gone\n")
    (work / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(300))
    start = tmp_path / "start"
    shutil.copytree(work, start)

    baseline = Baseline.capture(work)
    (work / "keep.txt").write_text("kept\n")
    (work / "sub" / "gone.txt").unlink()
    (work / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(200)))
    (work / "with space.md").write_text("# new\n")
    patch = baseline.diff_bytes()
    scratch = baseline._tmp
    assert scratch.exists()
    baseline.close()

    assert not scratch.exists()
    assert not (work / ".git").exists()
    apply(patch, start)
    assert files(start) == files(work)


def test_unborn_repository_without_index(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    start = tmp_path / "start"
    shutil.copytree(repo, start)
    with Baseline.capture(repo) as baseline:
        (repo / "a.txt").write_text("b\n")
        patch = baseline.diff_bytes()
    assert not (repo / ".git" / "index").exists()
    apply(patch, start)
    assert (start / "a.txt").read_text() == "b\n"


def test_fast_on_thousands_of_files(tmp_path: Path) -> None:
    repo = tmp_path / "big"
    repo.mkdir()
    git(repo, "init", "-q")
    for d in range(30):
        sub = repo / f"pkg{d}"
        sub.mkdir()
        for f in range(100):
            (sub / f"m{f}.py").write_text(f"x = {d * 100 + f}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "big")
    for f in range(500):  # untracked files count too
        (repo / "pkg0" / f"u{f}.txt").write_text(str(f))

    started = time.monotonic()
    with Baseline.capture(repo) as baseline:
        (repo / "pkg7" / "m3.py").write_text("x = -1\n")
        patch = baseline.diff()
    elapsed = time.monotonic() - started
    assert patch.count("diff --git") == 1 and "pkg7/m3.py" in patch
    assert elapsed < 15, f"capture + diff took {elapsed:.1f}s"


def test_closed_baseline_refuses_to_diff(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    baseline = Baseline.capture(tmp_path)
    baseline.close()
    with pytest.raises(RuntimeError, match="closed"):
        baseline.diff()


def test_git_env_of_the_caller_does_not_redirect_the_snapshot(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other-index"
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nope"))
    with Baseline.capture(repo) as baseline:
        (repo / "a.txt").write_text("changed\n")
        assert "+changed" in baseline.diff()
    assert not other.exists()
    assert os.environ["GIT_DIR"] == str(tmp_path / "nope")
