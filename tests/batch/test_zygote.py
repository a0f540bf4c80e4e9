"""The zygote's protocol: a request it cannot take (unknown target, malformed line, bad
fields) is refused without harm to the runs in flight, and nothing of it can be reached but
through the socketpair its caller holds."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.runner.child_protocol import send
from oiexec.runner.launch import LaunchError, Zygote
from oiexec.runner.zygote import TARGETS


@pytest.fixture
def zygote() -> Iterator[Zygote]:
    started = Zygote()
    try:
        yield started
    finally:
        started.close()


def _raw(zygote: Zygote, data: bytes) -> None:
    with zygote._send_lock:
        zygote._sock.sendall(data)


def _line(body: bytes) -> bytes:
    return body + b"\n"


def _sockets_of(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with_link = os.readlink(f"/proc/{pid}/fd/{fd}")
        if with_link.startswith("socket:"):
            found.add(with_link)
    return found


def test_bad_requests_are_refused_and_the_run_in_flight_goes_on(
    zygote: Zygote, tmp_path: Path
) -> None:
    # In flight: a task blocked reading its prompt from a pipe this test holds. It needs a
    # provider it can use (here one that refuses at once), or it would end before reading
    # its prompt with a missing API key (exit 3), racing the checks below on a loaded machine.
    stdin_r, stdin_w = os.pipe()
    dead = ["-c", 'model_provider="dead"', "-c", 'model_providers.dead.name="Dead"',
            "-c", 'model_providers.dead.base_url="http://127.0.0.1:9/v1"',
            "-c", "model_providers.dead.request_max_retries=0"]  # fmt: skip
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o600)
    err = os.open(tmp_path / "err", os.O_WRONLY | os.O_CREAT, 0o600)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OPENINTERPRETER_HOME": str(tmp_path)}
    try:
        running = zygote.spawn(
            "batch-task",
            {"argv": ["exec", "--skip-git-repo-check", *dead, "-"]},
            env=env,
            cwd=str(tmp_path),
            fds=[stdin_r, out, err],
        )
    finally:
        for fd in (stdin_r, out, err):
            os.close(fd)

    with pytest.raises(LaunchError, match="unknown target 'os:system'"):
        zygote.spawn("os:system", {}, env=env, cwd="/")
    with pytest.raises(LaunchError, match="cwd must be an absolute path"):
        zygote.spawn("batch-task", {"argv": []}, env=env, cwd="relative")
    with pytest.raises(LaunchError, match="env must map"):
        zygote.spawn("batch-task", {"argv": []}, env={"A=B": "c"}, cwd="/")
    # Lines no client of ours writes: not JSON, not an object, an unknown operation, a
    # pickle (never unpickled), descriptors without a life pipe, descriptors said and not
    # sent.
    _raw(zygote, _line(b"{not json"))
    _raw(zygote, _line(b"[1, 2]"))
    _raw(zygote, _line(json.dumps({"op": "exec", "id": 99}).encode()))
    _raw(zygote, _line(b"\x80\x04\x95cos\nsystem\n"))
    with zygote._send_lock:
        send(zygote._sock, {"op": "spawn", "id": 98, "target": "batch-task",
                            "args": {}, "env": {}, "cwd": "/"})  # fmt: skip
    _raw(zygote, _line(json.dumps({"op": "spawn", "id": 97, "fds": 3}).encode()))

    assert zygote.alive
    assert running.poll() is None  # still reading its prompt
    # The zygote still starts runs.
    probe = zygote.spawn(
        "batch-task", {"argv": ["--version"]}, env=env, cwd=str(tmp_path), fds=_stdio(tmp_path)
    )
    assert probe.wait(60) == 0
    # A line longer than any request is skipped, and the next one is read.
    _raw(zygote, _line(b'{"op": "spawn", "pad": "' + b"x" * (65 << 20) + b'"}'))
    probe = zygote.spawn(
        "batch-task", {"argv": ["--version"]}, env=env, cwd=str(tmp_path), fds=_stdio(tmp_path)
    )
    assert probe.wait(60) == 0
    # And reports the first run's end once its prompt is in: its provider refuses (exit 1).
    os.write(stdin_w, b"hello")
    os.close(stdin_w)
    assert running.wait(60) == 1, "the run in flight lost its exit status"
    assert zygote.alive


def _stdio(tmp_path: Path) -> list[int]:
    fds = [os.open(os.devnull, os.O_RDONLY)]
    for name in ("probe.out", "probe.err"):
        fds.append(os.open(tmp_path / name, os.O_WRONLY | os.O_CREAT, 0o600))
    return fds


def test_the_zygote_listens_nowhere_and_ends_with_its_caller(zygote: Zygote) -> None:
    assert set(TARGETS) == {"batch-task", "api-run"}
    # Its sockets: the one end of the caller's socketpair, nothing else.
    deadline = time.monotonic() + 30
    while len(_sockets_of(zygote.pid)) != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    (inode,) = _sockets_of(zygote.pid)
    number = inode.removeprefix("socket:[").removesuffix("]")
    (entry,) = [
        fields
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]
        if (fields := line.split())[6] == number
    ]
    # Connected (state 03), not accepting connections (flag 0x10000), bound to no path or
    # abstract name (no eighth column).
    assert entry[5] == "03" and not int(entry[3], 16) & 0x10000 and len(entry) == 7
    peer = zygote._sock.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
    assert peer == socket.SOCK_STREAM
    # The caller's end closing (the caller gone) ends the zygote.
    zygote.close()
    deadline = time.monotonic() + 30
    while zygote.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not zygote.alive


def test_a_new_zygote_comes_only_from_the_first_ones_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oiexec.runner import launch

    launch._check_interpreter()  # records this interpreter if no zygote has yet
    monkeypatch.setattr(launch, "_shared", None)  # as after the zygote died
    path, device, inode = launch._interpreter or ("", 0, 0)
    # A run replaced the Python file (e.g. a virtualenv inside the workspace).
    monkeypatch.setattr(launch, "_interpreter", (path, device, inode + 1))
    with pytest.raises(LaunchError, match="no longer the file this process started"):
        launch.spawn("batch-task", {"argv": ["--version"]}, env={}, cwd="/")
    assert launch._shared is None
