"""The prompt on stdin: `--timeout` covers the read, a pipe left open gets a hint, and the
read is bounded. Through the real CLI where a user would notice; the reader in-process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.cli import prompt as prompt_module
from oiexec.cli.prompt import WAITING_FOR_MORE, WAITING_FOR_PROMPT, read_stdin
from oiexec.core.errors import UsageError
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply, user_texts


def _start(args: list[str], cwd: Path, stdin: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """The CLI with a stdin pipe the test holds open and writes only when it chooses."""
    return subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


class _Lines:
    """stderr read on a thread, so the test can wait for one line with a deadline."""

    def __init__(self, stream: io.BufferedReader) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: io.BufferedReader) -> None:
        for raw in stream:
            with self._changed:
                self.lines.append(raw.decode(errors="replace"))
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float) -> float:
        """Seconds until a line containing `text` arrived; fails after `timeout`."""
        started = time.monotonic()
        with self._changed:
            if not self._changed.wait_for(
                lambda: any(text in line for line in self.lines), timeout
            ):
                raise AssertionError(f"no {text!r} on stderr within {timeout}s: {self.lines}")
        return time.monotonic() - started

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


def test_open_stdin_with_no_data_ends_at_the_timeout(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """A prompt argument plus a stdin nobody closes (a CI step, an agent's shell): Codex waits
    forever; `--timeout` ends it with its exit code, the message says what was waited for,
    and the JUnit report says so too."""
    junit = tmp_path / "report.xml"
    args = [*exec_args(model_server), "--timeout", "2", "--junit", str(junit), "do it"]
    read_end, write_end = os.pipe()  # held open by the test, never written
    started = time.monotonic()
    with _start(args, repo, stdin=read_end) as proc:
        os.close(read_end)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            os.close(write_end)
            if proc.poll() is None:
                proc.kill()
    elapsed = time.monotonic() - started
    text = stderr.decode()
    assert proc.returncode == 5, text
    assert "Reading additional input from stdin..." in text
    assert f"--timeout while {WAITING_FOR_MORE}" in text
    assert "Traceback" not in text
    # Only the failure on stdout (--json): no thread had started.
    [line] = stdout.decode().splitlines()
    assert json.loads(line)["type"] == "turn.failed" and "--timeout" in line
    # It waited for the limit (not an early usage error) and no longer than the limit allows.
    assert 2 <= elapsed < 2 + 8, elapsed
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure is not None and "--timeout" in failure.get("message", "")
    assert model_server.requests == []


def test_a_slow_prompt_gets_the_hint_once_and_is_still_read(
    model_server: ModelServer, repo: Path
) -> None:
    """No prompt argument, a stdin that stays quiet: the hint comes after a few seconds, the
    wait goes on (a slow producer is legitimate), and the prompt that then arrives runs."""
    model_server.enqueue(reply("done"))
    with _start([*exec_args(model_server), "--timeout", "120"], repo) as proc:
        assert proc.stdin is not None and proc.stderr is not None
        stderr = _Lines(proc.stderr)  # type: ignore[arg-type]
        try:
            stderr.wait_for("Reading prompt from stdin...", 30)
            waited = stderr.wait_for(WAITING_FOR_PROMPT, 30)
            assert waited >= prompt_module.HINT_AFTER - 0.5, waited
            proc.stdin.write(b"the slow prompt\n")
            proc.stdin.close()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = stderr.text()
    assert proc.returncode == 0, text
    assert text.count(WAITING_FOR_PROMPT) == 1
    assert "the slow prompt\n" in user_texts(model_server.bodies[0])  # untrimmed, whole


def test_a_piped_prompt_gets_no_hint(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "-"], cwd=repo, input="from stdin")
    assert result.returncode == 0, result.stderr
    assert "waiting" not in result.stderr
    assert "from stdin" in user_texts(model_server.bodies[0])


# --- the reader, in-process -------------------------------------------------------------


class _Stderr(io.StringIO):
    """A stderr that tells a waiting test when something was written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def write(self, text: str) -> int:
        count = super().write(text)
        self.written.set()
        return count


@pytest.fixture
def stdin_pipe(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """stdin replaced by a pipe's read end (the test writes the other end), with a short
    hint delay."""
    read_end, write_end = os.pipe()
    stream = os.fdopen(read_end, "r", encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stream)
    monkeypatch.setattr(prompt_module, "HINT_AFTER", 0.05)
    try:
        yield write_end
    finally:
        stream.close()
        with contextlib.suppress(OSError):  # the test may have closed it
            os.close(write_end)


def _capture_stderr(monkeypatch: pytest.MonkeyPatch) -> _Stderr:
    """In the test's body: pytest puts its own capture in place after the fixtures ran."""
    stderr = _Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    return stderr


def test_reader_hints_once_then_reads_to_the_end(
    stdin_pipe: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_end, stderr = stdin_pipe, _capture_stderr(monkeypatch)

    hinted: list[bool] = []

    def produce() -> None:
        hinted.append(stderr.written.wait(10))  # whatever happens, the read then ends
        os.write(write_end, b"late ")
        os.write(write_end, b"prompt")
        os.close(write_end)

    writer = threading.Thread(target=produce)
    writer.start()
    data = read_stdin("HINT")
    writer.join(10)
    assert hinted == [True], "the hint did not come before the data"
    assert data == b"late prompt"
    assert stderr.getvalue() == "HINT\n"


def test_reader_returns_at_once_with_data_and_refuses_past_the_cap(
    stdin_pipe: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_end, stderr = stdin_pipe, _capture_stderr(monkeypatch)
    monkeypatch.setattr(prompt_module, "HINT_AFTER", 30.0)
    monkeypatch.setattr(prompt_module, "PROMPT_MAX", 8)
    os.write(write_end, b"123456789")  # one byte over; the pipe stays open
    started = time.monotonic()
    with pytest.raises(UsageError, match="over the 8 bytes limit"):
        read_stdin("HINT")
    assert time.monotonic() - started < 5
    assert stderr.getvalue() == ""
