"""The mechanism under every report: where it lands is fixed when it is opened (before the
model runs), and nothing done to the path afterwards moves it (output/reportfile)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.output.reportfile import ReportDir, ReportDirChanged, ReportTarget, write_report


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marker").mkdir()
    return tmp_path


def test_a_missing_directory_is_made_at_open_and_relative_paths_are_from_the_cwd(
    work: Path,
) -> None:
    with ReportTarget.open("a/b/report.xml", "--junit") as target:
        assert (work / "a" / "b").is_dir()  # before anything is written
        assert not (work / "a" / "b" / "report.xml").exists()
        target.write("<xml/>")
        target.write("<xml2/>")  # a second write replaces the first
    assert (work / "a" / "b" / "report.xml").read_text() == "<xml2/>"
    assert [p.name for p in (work / "a" / "b").iterdir()] == ["report.xml"]  # no temp left


def test_a_directory_swapped_for_a_link_after_open_is_an_error(work: Path) -> None:
    with ReportTarget.open("reports/junit.xml", "--junit") as target:
        (work / "reports").rename(work / "moved")
        (work / "reports").symlink_to(work / "marker")
        with pytest.raises(ReportDirChanged, match="was replaced during the run"):
            target.write("x")
        # Another directory in its place (no link at all) is refused the same way.
        (work / "reports").unlink()
        (work / "reports").mkdir()
        with pytest.raises(ReportDirChanged):
            target.write("x")
    assert list((work / "marker").iterdir()) == []
    assert list((work / "moved").iterdir()) == []
    assert list((work / "reports").iterdir()) == []


def test_a_link_higher_up_swapped_in_is_an_error_too(work: Path) -> None:
    with ReportTarget.open("top/mid/junit.xml", "--junit") as target:
        (work / "top").rename(work / "top.old")
        (work / "marker" / "mid").mkdir()
        (work / "top").symlink_to(work / "marker")
        with pytest.raises(ReportDirChanged):
            target.write("x")
    assert list((work / "marker" / "mid").iterdir()) == []


def test_a_link_there_before_the_run_is_the_users_and_is_followed_then(work: Path) -> None:
    (work / "shared").mkdir()
    (work / "reports").symlink_to(work / "shared")  # the directory: the user's set-up
    (work / "last.txt").symlink_to(work / "shared" / "answer.txt")  # the file: also
    with ReportTarget.open("reports/junit.xml", "--junit") as junit:
        junit.write("j")
    with ReportTarget.open("last.txt", "-o") as last:
        last.write("answer")
    assert (work / "shared" / "junit.xml").read_text() == "j"
    assert (work / "last.txt").is_symlink()  # still the user's link, to the new file
    assert (work / "shared" / "answer.txt").read_text() == "answer"


def test_a_link_planted_at_the_name_during_the_run_is_replaced_not_followed(
    work: Path,
) -> None:
    victim = work / "marker" / "victim"
    victim.write_text("keep")
    with ReportTarget.open("change.patch", "--diff") as target:
        (work / "change.patch").symlink_to(victim)
        target.write("patch")
    assert victim.read_text() == "keep"
    assert not (work / "change.patch").is_symlink()
    assert (work / "change.patch").read_text() == "patch"


def test_fifos_sockets_and_directories_are_refused_at_open(work: Path) -> None:
    os.mkfifo(work / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(work / "sock"))
    (work / "dir").mkdir()
    (work / "to-fifo").symlink_to(work / "fifo")
    try:
        for name, why in [
            ("fifo", "is a FIFO"),
            ("to-fifo", "is a FIFO"),
            ("sock", "is a socket"),
            ("dir", "is a directory"),
        ]:
            with pytest.raises(UsageError, match=f"--junit {name}: {why}"):
                ReportTarget.open(name, "--junit")
    finally:
        server.close()
    assert (work / "to-fifo").is_symlink()


def test_a_character_device_is_written_into_never_replaced(work: Path) -> None:
    before = os.stat("/dev/null")
    write_report("/dev/null", "discarded")
    after = os.lstat("/dev/null")
    assert (after.st_ino, after.st_rdev, after.st_mode) == (
        before.st_ino,
        before.st_rdev,
        before.st_mode,
    )


def test_stdout_as_a_pipe_is_written_like_a_redirection(work: Path) -> None:
    code = (
        "from oiexec.output.reportfile import ReportTarget\n"
        "t = ReportTarget.open('/dev/stdout', '-o')\n"
        "print('before', flush=True)\n"
        "t.write('report\\n')\n"
        "t.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == "before\nreport\n"
    assert os.path.islink("/dev/stdout")


def test_a_swap_right_after_the_check_still_lands_in_the_directory_opened(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window between the check and the rename, taken at its worst: the directory swapped
    for a link just after the check passed. The write goes into the directory opened at the
    start (its descriptor), never through the link."""
    reports = work / "reports"
    target = ReportTarget.open("reports/junit.xml", "--junit")
    check = ReportTarget._check_directory

    def check_then_swap(self: ReportTarget) -> None:
        check(self)
        reports.rename(work / "real")
        reports.symlink_to(work / "marker")

    monkeypatch.setattr(ReportTarget, "_check_directory", check_then_swap)
    with target:
        target.write("x")
    assert list((work / "marker").iterdir()) == []
    assert (work / "real" / "junit.xml").read_text() == "x"


def test_a_report_dir_writes_beneath_it_and_refuses_a_swapped_subdirectory(
    work: Path,
) -> None:
    out = ReportDir.open("runs/nightly")
    try:
        out.makedirs("t1")
        out.write("t1/result.json", "{}")
        out.write("summary.json", "{}")
        fd = out.open_file("t1/events.jsonl")
        os.write(fd, b"line\n")
        os.close(fd)
        assert (work / "runs" / "nightly" / "t1" / "result.json").read_text() == "{}"
        assert (work / "runs" / "nightly" / "t1" / "events.jsonl").read_bytes() == b"line\n"
        (work / "runs" / "nightly" / "t1").rename(work / "runs" / "nightly" / "t1.old")
        (work / "runs" / "nightly" / "t1").symlink_to(work / "marker")
        with pytest.raises(ReportDirChanged, match="is a symlink"):
            out.write("t1/result.json", "{}")
        with pytest.raises(ReportDirChanged):
            out.open_file("t1/events.jsonl")
        with pytest.raises(ReportDirChanged):
            out.makedirs("t1/sub")
        out.unlink("t1")  # the link itself
        assert not (work / "runs" / "nightly" / "t1").exists()
    finally:
        out.close()
    assert list((work / "marker").iterdir()) == []


def test_beneath_an_untrusted_root_a_link_there_before_the_run_is_not_followed(
    work: Path,
) -> None:
    """The workspace's content is the model's (an earlier run's) or the reviewed change's: a
    link in it is nobody's choice but theirs, whenever it was made."""
    ws = work / "ws"
    ws.mkdir()
    (ws / "reports").symlink_to(work / "marker")
    (work / "via").symlink_to(ws / "reports")  # the user's link outside, leading in
    victim = work / "marker" / "victim.txt"
    victim.write_text("keep")
    (ws / "last.txt").symlink_to(victim)
    roots = [ws]
    for path in ("ws/reports/junit.xml", "via/junit.xml", str(ws / "reports" / "x" / "j.xml")):
        with pytest.raises(UsageError, match="symbolic link inside"):
            ReportTarget.open(path, "--junit", untrusted=roots)
    with ReportTarget.open("ws/last.txt", "-o", untrusted=roots) as last:
        last.write("answer")  # the link at the name is replaced
    assert victim.read_text() == "keep"
    assert (ws / "last.txt").read_text() == "answer"
    assert [p.name for p in (work / "marker").iterdir()] == ["victim.txt"]
    # Outside the roots the user's links still count.
    with ReportTarget.open("via-out/j.xml", "--junit", untrusted=roots) as ok:
        ok.write("j")
    assert (work / "via-out" / "j.xml").read_text() == "j"
