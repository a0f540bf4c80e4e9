"""Reports are written by the runner, outside the sandbox, where the paths named them when the
run started: a command that swaps a report's directory for a symlink cannot move them
(`reports -> /etc/cron.d` as root), an existing device is written into and never replaced
(`--junit /dev/null` once replaced a root machine's /dev/null with a file), and a FIFO or a
directory is refused before the model runs."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import (
    BACKENDS,
    IS_ROOT,
    Box,
    exec_backend_args,
    unprivileged_ids,
)
from tests.sandbox.support import commit_all
from tests.support.model_server import ModelServer, Step, call, reply

_REPORTS = ["--junit", "reports/junit.xml", "--diff", "reports/change.patch"]
_LAST = ["-o", "reports/last.txt"]


def _marker(box: Box) -> Path:
    """An empty directory outside every root that the runner's user could write to: a report
    landing there would be an escape, and permissions would not have stopped it."""
    marker = box.outside / "marker"
    marker.mkdir()
    if box.who != "root":
        os.chown(marker, *unprivileged_ids())
    return marker


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_report_directory_swapped_for_a_link_is_not_followed(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    marker = _marker(box)
    swap = f"mv reports reports.old && ln -s {marker} reports && echo x > new.txt"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": swap})]),
        reply("swapped"),
    )
    # Relative paths in a directory that does not exist yet: made at the start.
    result = box.exec(model_server.config_args(), "workspace-write", backend, *_REPORTS, *_LAST)
    assert (box.ws / "reports").is_symlink(), result.stderr  # the swap happened
    assert list(marker.iterdir()) == []
    assert list((box.ws / "reports.old").iterdir()) == []
    # Said once per report, naming it; the run's own outcome stands (a report is a warning).
    assert result.returncode == 0, result.stderr
    for flag in ("--junit", "--diff", "-o"):
        assert f"could not write {flag} reports/" in result.stderr
    assert "was replaced during the run" in result.stderr


def test_a_link_an_earlier_run_planted_in_the_workspace_is_not_followed(
    box: Box, model_server: ModelServer
) -> None:
    """`reports -> <anywhere>` left in the workspace by an earlier run's command (or shipped by
    a change under review) is there before the run, but it is not the user's: refused before
    the model runs."""
    marker = _marker(box)
    (box.ws / "reports").symlink_to(marker)
    model_server.enqueue(reply("never asked"))
    result = box.exec(model_server.config_args(), "workspace-write", "bwrap", *_REPORTS)
    assert result.returncode == 2, result.stderr
    assert "a directory on the way is a symbolic link inside" in result.stderr
    assert model_server.model_requests == []
    assert list(marker.iterdir()) == []


def test_a_report_directory_swapped_in_a_loop_is_never_followed(
    box: Box, model_server: ModelServer
) -> None:
    """The attacker's loop runs outside (a command's background children die with it), from
    the model's first request (once the runner has opened the directory) to the end: whichever
    state the directory is in when the runner writes, no report lands in the link's target."""
    marker = _marker(box)
    reports = box.ws / "reports"
    reports.mkdir()
    if box.who != "root":
        os.chown(reports, *unprivileged_ids())
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        real, link = box.ws / "reports.real", box.ws / "reports.link"
        while not stop.is_set():
            os.symlink(marker, link)
            os.rename(reports, real)
            os.rename(link, reports)  # the link in place of the directory
            os.rename(reports, link)
            os.rename(real, reports)  # and back
            os.unlink(link)
            swaps += 1

    thread = threading.Thread(target=swap)

    def start_swapping(_body: Any) -> Step:
        thread.start()
        return reply(tool_calls=[call("exec_command", {"cmd": "echo x > new.txt"})])

    model_server.enqueue(start_swapping, reply("done"))
    try:
        result = box.exec(model_server.config_args(), "workspace-write", "bwrap", *_REPORTS)
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
    assert swaps > 10
    assert list(marker.iterdir()) == [], result.stderr
    written = sorted(p.name for p in reports.iterdir())
    assert result.returncode == 0, result.stderr
    # Each report either landed in the real directory or is named as not written.
    for flag, name in (("--junit", "junit.xml"), ("--diff", "change.patch")):
        assert name in written or f"could not write {flag}" in result.stderr


def _char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def test_devices_are_written_into_and_stdout_as_a_pipe_works(
    box: Box, model_server: ModelServer, tmp_path: Path
) -> None:
    """As root the real /dev/null (and a null device made here) stays a device; `-o
    /dev/stdout` with stdout a pipe writes into the pipe, as a redirection would."""
    made = box.outside / "null"
    if IS_ROOT:
        os.mknod(made, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.chmod(made, 0o666)  # past the umask
    model_server.enqueue(reply("the final answer"))
    extra = ["--junit", "/dev/null", "-o", "/dev/stdout"]
    if IS_ROOT:
        extra += ["--diff", str(made)]
    try:
        result = box.exec(model_server.config_args(), "workspace-write", "bwrap", *extra)
        assert result.returncode == 0, result.stderr
        assert _char_device(Path("/dev/null"))
        with open("/dev/null", "w") as null:  # still works
            null.write("x")
        if IS_ROOT:
            assert _char_device(made)
        assert result.stdout.endswith("the final answer")  # after the JSON events
        assert "could not write" not in result.stderr
    finally:
        if IS_ROOT and not _char_device(Path("/dev/null")):  # never leave the machine broken
            os.unlink("/dev/null")
            os.mknod("/dev/null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
            os.chmod("/dev/null", 0o666)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (os.mkfifo, "is a FIFO"),
        (os.mkdir, "is a directory"),
    ],
    ids=["fifo", "directory"],
)
def test_a_fifo_or_directory_target_is_refused_before_the_model_runs(
    box: Box, model_server: ModelServer, make: Callable[[Path], None], why: str
) -> None:
    target = box.ws / "target"
    make(target)
    if box.who != "root":
        os.chown(target, *unprivileged_ids())
    model_server.enqueue(reply("never asked"))
    started = time.monotonic()
    result = box.exec(
        model_server.config_args(),
        "workspace-write",
        "bwrap",
        "--junit",
        "target",
        "--diff",
        "out.patch",
        timeout=60,
    )
    assert time.monotonic() - started < 60  # no hang on the FIFO
    assert result.returncode == 2, result.stderr
    assert f"--junit target: {why}" in result.stderr
    assert model_server.model_requests == []
    # The report that could be opened still says the run stopped (an empty patch).
    assert (box.ws / "out.patch").read_bytes() == b""
    assert stat.S_IFMT(os.lstat(target).st_mode) == stat.S_IFMT(
        stat.S_IFIFO if make is os.mkfifo else stat.S_IFDIR
    )


def _batch(box: Box, server: ModelServer, backend: str, tasks: Path, out: Path) -> str:
    done = box.interpreter(
        ["batch", str(tasks), "--out", str(out), "--jobs", "1", "-s", "workspace-write",
         "--add-dir", str(out), *exec_backend_args(backend),
         *server.config_args(request_max_retries=0)],
        timeout=180,
    )  # fmt: skip
    return done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_task_directory_swapped_for_a_link_is_not_followed(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    """The out dir is writable from the task (--add-dir, or a shared /tmp under Landlock):
    the task swaps its own directory for a link, and plants one where the next task's goes;
    neither the task's exec nor the batch writes through either."""
    marker = _marker(box)
    out = box.outside / "runs"
    out.mkdir()
    if box.who != "root":
        os.chown(out, *unprivileged_ids())
    commit_all(box.ws)
    tasks = box.outside / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": i, "prompt": i, "repo": str(box.ws)}) + "\n" for i in ("t1", "t2")
        )
    )
    swap = f"mv {out}/t1 {out}/t1.old && ln -s {marker} {out}/t1 && ln -s {marker} {out}/t2"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": swap})]),
        reply("swapped"),
    )
    stderr = _batch(box, model_server, backend, tasks, out)
    assert (out / "t1").is_symlink(), stderr
    assert list(marker.iterdir()) == [], stderr
    summary = json.loads((out / "summary.json").read_text())
    for entry in summary["tasks"]:
        assert entry["status"] == "failed"
        assert "is a symlink" in (entry["message"] or ""), entry
    assert len(model_server.model_requests) == 2  # t1's two turns; t2 never started
    # The task's exec wrote none of its reports through the link either.
    assert not {"junit.xml", "diff.patch", "last-message.txt"} & {
        p.name for p in (out / "t1.old").iterdir()
    }
