"""bwrap gives each run a private /tmp (and $TMPDIR): no guard dirs such as `/tmp/.git` ever
appear on the host while commands run, /tmp writes persist across the commands of one run
but never reach the host's /tmp, and the private dir is gone when the run ends."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from oiexec.sandbox.paths import PROTECTED_NAMES
from tests.sandbox.conftest import (
    BACKENDS,
    RUNNER_PYTHON,
    Box,
    backend_args,
    unprivileged_ids,
)
from tests.support.model_server import ModelServer, call, reply, tool_outputs


def _guards(directory: Path) -> set[tuple[str, int]]:
    """Protected names present in `directory`, with their inode (to tell new from stale)."""
    found: set[tuple[str, int]] = set()
    for name in PROTECTED_NAMES:
        with contextlib.suppress(FileNotFoundError):
            found.add((name, os.lstat(directory / name).st_ino))
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_guard_dirs_appear_in_host_tmp_while_a_command_runs(box: Box, backend: str) -> None:
    tmpdir = box.outside / "tmpdir"  # a $TMPDIR that is not /tmp gets the same treatment
    tmpdir.mkdir()
    if box.who != "root":  # the runner's own dir (a root runner has no CAP_DAC_OVERRIDE inside)
        os.chown(tmpdir, *unprivileged_ids())
    watched = [Path("/tmp"), tmpdir]
    before = {d: _guards(d) for d in watched}
    probe = Path("/tmp", f"oi-probe-{uuid.uuid4().hex[:8]}")
    # Under bwrap, also try to create the guards (Landlock's tripwire only removes them later).
    attempt = 'mkdir /tmp/.git "$TMPDIR"/.codex 2>/dev/null; ' if backend == "bwrap" else ""
    script = (
        f'touch started; echo x > {probe}; echo y > "$TMPDIR"/probe; {attempt}'
        f"sleep 1.5; cat {probe}"
    )
    argv = box.as_me(
        [RUNNER_PYTHON, "-m", "oiexec.cli.sandbox_cmd", "-s", "workspace-write",
         *backend_args(backend), "--", "/bin/sh", "-c", script]
    )  # fmt: skip
    env = box.env(TMPDIR=str(tmpdir))
    proc = subprocess.Popen(argv, cwd=box.ws, env=env, stdout=subprocess.PIPE, text=True)
    seen_running = False
    try:
        while proc.poll() is None:
            seen_running = seen_running or (box.ws / "started").exists()
            for directory in watched:
                new = _guards(directory) - before[directory]
                assert not new, f"guard dirs appeared in {directory}: {new}"
            time.sleep(0.02)
    finally:
        proc.kill()
        stdout = proc.communicate()[0]
    assert seen_running, "the command never ran while we watched"
    assert proc.returncode == 0 and stdout == "x\n"
    assert probe.exists() == (backend == "landlock")
    probe.unlink(missing_ok=True)
    if backend == "bwrap":
        # Nothing written inside reached the host, and the private dir (made under the
        # runner's $TMPDIR) was removed at the end.
        assert list(tmpdir.iterdir()) == []
    else:
        assert (tmpdir / "probe").read_text() == "y\n"  # Landlock keeps the host's dirs


def test_tmp_persists_across_commands_of_one_run_but_not_on_the_host(
    box: Box, model_server: ModelServer
) -> None:
    name = f"oi-private-{uuid.uuid4().hex[:8]}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"echo kept > /tmp/{name}"})]),
        reply(tool_calls=[call("exec_command", {"cmd": f"cat /tmp/{name}; ls -a /tmp"})]),
        reply("done"),
    )
    proc = box.exec(model_server.config_args(), "workspace-write", "bwrap")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events[-1]["type"] == "turn.completed"
    second = list(tool_outputs(model_server.bodies[-1]).values())[-1]
    assert "kept" in second  # the first command's /tmp write is there for the second
    assert not Path("/tmp", name).exists()  # ... and never in the host's /tmp
    # Inside, the private /tmp holds the (read-only, empty) guards, not the host's files.
    assert ".git" in second.split()
