"""The process layer with real processes: groups, output, stdin, PTYs, bounded waits."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.core.policy import PreparedCommand
from oiexec.core.redact import clear_secrets, register_secret
from oiexec.tools.process import (
    FIRST_SESSION_ID,
    ProcessRegistry,
    ProcessSession,
    StdinClosed,
    _Capped,
    exit_status,
)


def dead(pid: int, timeout: float = 3.0) -> bool:
    """True once `pid` is gone (or a zombie waiting for init to reap it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.02)
    return False


def command(script: str, tmp_path: Path) -> PreparedCommand:
    return PreparedCommand(argv=["/bin/bash", "-c", script], env=dict(os.environ), cwd=tmp_path)


@pytest.fixture
def registry() -> Iterator[ProcessRegistry]:
    reg = ProcessRegistry()
    yield reg
    reg.close_all()


def test_exit_status_maps_signals_to_128_plus_n() -> None:
    assert exit_status(0) == 0
    assert exit_status(3) == 3
    assert exit_status(-15) == 143
    assert exit_status(-9) == 137


def test_merged_output_and_exit_code(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("echo out; echo err >&2; echo again; exit 7", tmp_path))
    assert session.wait(5) == 7
    assert session.take_output() == "out\nerr\nagain\n"
    assert session.take_output() == ""  # taken once
    assert session.output_so_far() == "out\nerr\nagain\n"


def test_killed_by_signal_reports_128_plus_n(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("kill -TERM $$", tmp_path))
    assert session.wait(5) == 143


def test_wait_returns_none_while_running(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("sleep 0.6; echo done", tmp_path))
    assert session.wait(0.1) is None
    assert session.wait(5) == 0
    assert session.take_output() == "done\n"


def test_runs_in_its_own_session_with_piped_stdin(
    registry: ProcessRegistry, tmp_path: Path
) -> None:
    _, session = registry.spawn(
        command("ps -o sid= -p $$; ps -o pgid= -p $$; readlink /proc/self/fd/0", tmp_path)
    )
    assert session.wait(5) == 0
    sid, pgid, stdin = session.take_output().split()
    assert int(sid) == session.pid == int(pgid)
    assert stdin.startswith("pipe:")
    assert stdin != os.readlink("/proc/self/fd/0")


def test_kill_takes_the_whole_group(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("sleep 30 & echo $!; wait", tmp_path))
    child = _first_line_int(session)
    started = time.monotonic()
    assert session.kill() == 143
    assert time.monotonic() - started < 2.5
    assert dead(child)


def test_kill_escalates_to_sigkill(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("trap '' TERM; sleep 30 & echo $!; wait", tmp_path))
    child = _first_line_int(session)
    assert session.kill(grace=0.2) == 137
    assert dead(child)


def test_background_child_holding_output_does_not_hang(
    registry: ProcessRegistry, tmp_path: Path
) -> None:
    session_id, session = registry.spawn(command("sleep 30 & echo $!", tmp_path))
    started = time.monotonic()
    assert session.wait(10) == 0
    assert time.monotonic() - started < 2
    child = int(session.take_output())
    registry.release(session_id)
    assert not dead(child, timeout=0.1)  # a server started with & keeps running...
    registry.close_all()
    assert dead(child)  # ...until the run ends


def test_write_feeds_stdin(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("read x; echo got $x", tmp_path))
    assert session.wait(0.2) is None
    session.write("hello\n")
    assert session.wait(5) == 0
    assert session.take_output() == "got hello\n"


def test_write_never_blocks_on_a_process_that_does_not_read(
    registry: ProcessRegistry, tmp_path: Path
) -> None:
    _, session = registry.spawn(command("sleep 30", tmp_path))
    started = time.monotonic()
    written = session.write("x" * 1_000_000, timeout=0.3)
    assert time.monotonic() - started < 2
    assert 0 < written < 1_000_000


def test_write_to_closed_stdin_raises(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("exec 0<&-; sleep 30", tmp_path))
    time.sleep(0.2)
    with pytest.raises(StdinClosed):
        session.write("hello\n")


def test_pty_mode_gives_a_terminal(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(
        command("tty; test -t 0 && test -t 1 && echo both; read x; echo got $x", tmp_path),
        tty=True,
    )
    assert session.wait(0.3) is None
    session.write("abc\n")
    assert session.wait(5) == 0
    output = session.take_output()
    assert "/dev/pts/" in output
    assert "both" in output
    assert "got abc" in output


def test_pipe_mode_is_not_a_terminal(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command("test -t 1 || echo notty", tmp_path))
    assert session.wait(5) == 0
    assert session.take_output() == "notty\n"


def test_output_split_inside_a_utf8_character(registry: ProcessRegistry, tmp_path: Path) -> None:
    _, session = registry.spawn(command(r"printf '\xc3'; sleep 0.3; printf '\xa9\n'", tmp_path))
    assert session.wait(0.15) is None
    first = session.take_output()
    assert session.wait(5) == 0
    assert first + session.take_output() == "é\n"


def test_capped_buffer_keeps_head_and_tail() -> None:
    buf = _Capped(cap=10)
    buf.append(b"0123456789")
    buf.append(b"abcdefghij")
    value = buf.getvalue()
    assert value.startswith(b"01234")
    assert value.endswith(b"fghij")
    assert b"10 bytes of output dropped" in value


SECRET = "sk-live-0123456789abcdefghij"


@pytest.fixture
def registered_secret() -> Iterator[str]:
    register_secret(SECRET)
    yield SECRET
    clear_secrets()


def _floods(secret: bytes, half: int) -> Iterator[bytes]:
    """Outputs whose head cut (at `half`) or tail cut (`half` from the end) goes through
    `secret`, at every offset."""
    filler = b"." * (4 * half)
    for inside in range(1, len(secret)):
        yield b"x" * (half - inside) + secret + filler  # the head's cut
        yield filler + secret + b"y" * (half - inside)  # the tail's cut


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_a_secret_across_either_cut_leaves_no_fragment(registered_secret: str, chunk: int) -> None:
    """The middle of a flood is dropped only after each kept half was redacted whole: a secret
    a cut goes through is masked, not cut into a piece no redaction recognises."""
    secret = registered_secret.encode()
    for data in _floods(secret, half=100):
        buf = _Capped(cap=200)
        for start in range(0, len(data), chunk):
            buf.append(data[start : start + chunk])
        value = buf.getvalue()
        head, marker, tail = value.partition("\n…".encode())
        assert marker and len(head) <= 100 and len(tail) <= 100 + 40
        pieces = {secret[i : i + 6] for i in range(len(secret) - 5)}
        assert not any(piece in value for piece in pieces), value


def test_exited_processes_are_reaped(registry: ProcessRegistry, tmp_path: Path) -> None:
    session_id, session = registry.spawn(command("exit 0", tmp_path))
    assert session.wait(5) == 0
    registry.release(session_id)
    assert not Path(f"/proc/{session.pid}").exists()


def test_registry_ids_and_close_all(registry: ProcessRegistry, tmp_path: Path) -> None:
    closed: list[int] = []
    first_id, first = registry.spawn(command("sleep 30", tmp_path))
    second_id, second = registry.spawn(command("sleep 30", tmp_path))
    assert (first_id, second_id) == (FIRST_SESSION_ID, FIRST_SESSION_ID + 1)
    assert registry.get(first_id) is first
    first.on_close = lambda s: closed.append(s.pid)
    started = time.monotonic()
    registry.close_all()
    assert time.monotonic() - started < 2
    assert closed == [first.pid]
    assert dead(first.pid) and dead(second.pid)
    assert registry.get(first_id) is None
    assert len(registry) == 0
    assert not [t for t in threading.enumerate() if t.name.startswith("oiexec-output-")]


def test_spawn_failure_raises_oserror(registry: ProcessRegistry, tmp_path: Path) -> None:
    missing = PreparedCommand(argv=[str(tmp_path / "nope")], env={}, cwd=tmp_path)
    with pytest.raises(OSError):
        registry.spawn(missing)
    with pytest.raises(OSError):
        registry.spawn(missing, tty=True)
    assert len(registry) == 0


def test_session_close_releases_descriptors(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for tty in (False, True):
        session = ProcessSession(command("echo hi", tmp_path), tty=tty)
        session.wait(5)
        session.close()
    assert len(os.listdir("/proc/self/fd")) == before


def _first_line_int(session: ProcessSession) -> int:
    deadline = time.monotonic() + 5
    text = ""
    while "\n" not in text and time.monotonic() < deadline:
        session.wait(0.05)
        text += session.take_output()
    return int(text.split()[0])
