"""Writes the runner does for the model cannot be redirected by a sandboxed command: through
a full `interpreter exec`, a background command swaps a workspace directory with a symlink to
outside (`renameat2(RENAME_EXCHANGE)` in a loop) while the model sends patch after patch into
that directory. Nothing may land outside; the patches that succeed land in the workspace.
Also: protected names are refused however a case-folding file system would spell them."""

from __future__ import annotations

import json
import os

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, Box
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, tool_outputs

#: Runs inside the sandbox, in the workspace: exchanges `d` (a directory) and `l` (a link to
#: outside) until `stop` appears, then records how many exchanges it made.
_SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("d")
os.symlink(sys.argv[1], "l")
open("swapping", "w").close()
swaps, deadline = 0, time.monotonic() + 30
while not os.path.exists("stop") and time.monotonic() < deadline:
    for _ in range(200):
        if libc.renameat2(-100, b"d", -100, b"l", 2) != 0:
            sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    swaps += 200
with open("swaps.txt", "w") as out:
    out.write(str(swaps))
"""
TURNS, PATCHES_PER_TURN = 10, 25


def _add(path: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_swapped_directory_cannot_redirect_patches(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    script = box.ws / "swapper.py"  # /tmp outside the workspace is private under bwrap
    script.write_text(_SWAPPER)
    script.chmod(0o644)
    start = f"{PYTHON} {script} {box.outside}"
    patches = [
        reply(tool_calls=[apply_patch_call(_add(f"d/x{t}-{i}")) for i in range(PATCHES_PER_TURN)])
        for t in range(TURNS)
    ]
    # Commands that wait for the swapper to start, then to stop (a loaded machine is slow).
    started = "until [ -e swapping ]; do sleep 0.05; done; echo started"
    stopped = "touch stop; until [ -e swaps.txt ]; do sleep 0.05; done; cat swaps.txt"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": start, "yield_time_ms": 250})]),
        reply(tool_calls=[call("exec_command", {"cmd": started, "yield_time_ms": 30000})]),
        *patches,
        reply(tool_calls=[call("exec_command", {"cmd": stopped, "yield_time_ms": 30000})]),
        reply("done"),
    )
    result = box.exec(model_server.config_args(), "workspace-write", backend)
    assert result.returncode == 0, result.stderr

    outputs = list(tool_outputs(model_server.bodies[-1]).values())
    assert "started" in outputs[1], outputs
    swaps = int((box.ws / "swaps.txt").read_text())
    assert swaps > 1000, "the swapper did not run"
    patched = outputs[2:-1]
    assert len(patched) == TURNS * PATCHES_PER_TURN
    assert os.listdir(box.outside) == []
    # Whichever of d and l is the real directory now holds exactly the patches reported done.
    [real_dir] = [box.ws / n for n in ("d", "l") if not (box.ws / n).is_symlink()]
    done = [o for o in patched if o.startswith("Exit code: 0")]
    assert done, "every patch was refused, so the test proves nothing"
    assert len(done) == len(os.listdir(real_dir))
    refused = [o for o in patched if not o.startswith("Exit code: 0")]
    for output in refused:
        assert "outside the writable roots" in output or "changed while being written" in output


@pytest.mark.parametrize("backend", BACKENDS)
def test_protected_names_are_refused_however_spelled(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    names = [".GIT/config", ".Git/hooks/post-checkout", ".openInterpreter/config.toml", ".git./x"]
    model_server.enqueue(
        reply(tool_calls=[apply_patch_call(_add(name)) for name in names]),
        reply("done"),
    )
    result = box.exec(model_server.config_args(), "workspace-write", backend)
    assert result.returncode == 0, result.stderr
    outputs = list(tool_outputs(model_server.bodies[-1]).values())
    assert len(outputs) == len(names)
    for name, output in zip(names, outputs, strict=True):
        assert output.startswith("apply_patch rejected: cannot add"), output
        assert f"{name.split('/')[0]} is read-only inside the sandbox" in output
    assert sorted(os.listdir(box.ws)) == [".git", "README"]
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    changes = [
        e["item"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "file_change"
    ]
    assert [c["status"] for c in changes] == ["failed"] * len(names)
