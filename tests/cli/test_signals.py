"""Ctrl-C and a CI runner's cancellation end the run cleanly: the JSON stream ends with
`turn.failed`, the exit code names the signal (130 SIGINT, 143 SIGTERM), the reports are
written and nothing the model started is left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply, stall


def _wait_for(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _running(marker: str) -> list[str]:
    """Processes whose command line carries `marker` (our own pgrep: no procps needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(entry.name)
    return found


def _start(
    args: list[str], cwd: Path, *, stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_turn_ends_the_stream_writes_reports_and_leaves_no_process(
    model_server: ModelServer, repo: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    marker = f"oiexec-bg-{uuid.uuid4().hex}"
    # The model starts a background process, then takes long over its next answer.
    background = f"nohup python -c 'import time; time.sleep(600)' {marker} >/dev/null 2>&1 &"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": background})]),
        stall(60, reply=reply("too late")),
    )
    junit = tmp_path / "report.xml"
    proc = _start([*exec_args(model_server), "--junit", str(junit), "task"], repo)
    try:
        _wait_for(lambda: len(model_server.model_requests) >= 2, "the second model request")
        assert _running(marker), "the background process should be running mid-turn"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr.decode()
    events = [json.loads(line) for line in stdout.decode().splitlines()]
    assert events[-1] == {
        "type": "turn.failed",
        "error": {"message": f"interrupted by {sig.name}"},
        "failure_class": "interrupted",
    }
    assert f"interrupted by {sig.name}" in stderr.decode()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == "interrupted"
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["exit_code"] == str(code) and properties["status"] == "interrupted"
    _wait_for(lambda: not _running(marker), "the background process to be gone", 10)
    # The session says how the run ended.
    listed = run_cli(["sessions", "list", "--json"], cwd=repo)
    row = json.loads(listed.stdout)["sessions"][0]
    assert (row["status"], row["exit_code"]) == ("interrupted", code), listed.stdout


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_waiting_for_stdin_still_writes_the_reports(
    model_server: ModelServer, repo: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    junit, diff = tmp_path / "report.xml", tmp_path / "change.patch"
    args = [*exec_args(model_server), "--junit", str(junit), "--diff", str(diff), "-"]
    proc = _start(args, repo, stdin=subprocess.PIPE)  # open, never written
    assert proc.stderr is not None
    try:
        # Checks passed: the prompt is being read from a stdin that has not ended.
        line = proc.stderr.readline().decode()
        assert "Reading prompt from stdin" in line
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr.decode()
    # No thread was started: --json's stream is the failure alone, as after a started run.
    [event] = [json.loads(line) for line in stdout.decode().splitlines()]
    assert event == {
        "type": "turn.failed",
        "error": {"message": f"interrupted by {sig.name}"},
        "failure_class": "interrupted",
    }
    assert f"interrupted by {sig.name}" in stderr.decode()
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == "interrupted"
    assert f"interrupted by {sig.name} (exit code {code})" in failure.get("message", "")
    assert diff.read_bytes() == b""
    assert model_server.requests == []


def test_sigterm_in_human_mode_says_so(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(stall(60, reply=reply("too late")))
    args = [a for a in exec_args(model_server) if a != "--json"]
    proc = _start([*args, "task"], repo)
    try:
        _wait_for(lambda: len(model_server.model_requests) >= 1, "the model request")
        os.kill(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    assert stdout == b""  # no final message
    assert "interrupted by SIGTERM" in stderr.decode()
    assert "Traceback" not in stderr.decode()


_STUCK_CLEANUP = """
import os, signal, sys, time
from oiexec.core.errors import Interrupted
from oiexec.runner import signals

signals.CLEANUP_STUCK_S = 0.3
def cleanup_that_hangs():
    time.sleep(float(sys.argv[1]))

with signals.interrupt_signals():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    except Interrupted:
        cleanup_that_hangs()
time.sleep(float(sys.argv[2]))  # the run is over: no dump, however long the process lives
"""


@pytest.mark.parametrize(("cleanup_s", "after_s", "dumped"), [(1.5, 0.0, True), (0.0, 1.0, False)])
def test_a_cleanup_that_hangs_after_a_signal_leaves_its_stacks_on_stderr(
    cleanup_s: float, after_s: float, dumped: bool
) -> None:
    """Whoever sent the signal kills a run that does not end (a batch after 10 s): before
    that, the run says where it hung, which is what a bug report needs."""
    proc = subprocess.run(
        [sys.executable, "-c", _STUCK_CLEANUP, str(cleanup_s), str(after_s)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert ("in cleanup_that_hangs" in proc.stderr) is dumped, proc.stderr


_SIGNAL_IN_A_FINALIZER = """
import gc, os, signal, sys, time
from oiexec.core.errors import Interrupted, RunTimedOut
from oiexec.runner import signals

class Finalized:
    def __del__(self):
        # The signal arrives while a finalizer runs: its handler's exception can only be
        # printed and dropped there.
        if sys.argv[1] == "timeout":
            signal.setitimer(signal.ITIMER_REAL, 0.001)
        else:
            os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 0.3  # long enough for the handler to run in here
        while time.monotonic() < deadline:
            pass

context = (signals.deadline_alarm(time.monotonic() + 60) if sys.argv[1] == "timeout"
           else signals.interrupt_signals())
with context:
    try:
        Finalized()  # finalized at once
        time.sleep(20)  # the run going on, as a task waiting for its command did
        print("not interrupted")
    except (Interrupted, RunTimedOut) as exc:
        print("ended:", type(exc).__name__)
"""


@pytest.mark.parametrize(
    ("kind", "error"), [("sigterm", "Interrupted"), ("timeout", "RunTimedOut")]
)
def test_a_signal_that_lands_in_a_finalizer_still_ends_the_run(kind: str, error: str) -> None:
    """Python drops an exception raised inside a finalizer ("Exception ignored in ...");
    a signal's must be raised again where the run can see it."""
    proc = subprocess.run(
        [sys.executable, "-c", _SIGNAL_IN_A_FINALIZER, kind],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.stdout == f"ended: {error}\n", proc.stderr
    assert "Exception ignored" not in proc.stderr
    assert "interrupted again" not in proc.stderr
