"""Nothing of the runner listens where a sandboxed command could connect (issue 21).

The batch launcher and the Python API used to start runs through multiprocessing's fork
server: a socket under $TMPDIR that unpickles what a client sends. Under Landlock (host /tmp
shared) with the network on, a task connected and ran code outside the sandbox. Here the
scripted model's command, in a batch task and in an API turn, lists every listening Unix
socket (/proc/net/unix) and every socket file under $TMPDIR, /tmp, /var/tmp and /dev/shm,
connects to each, and sends each socket under a temporary directory the fork server's request:
descriptors, then a pickle that would create a marker outside every root. While the run is
still going (the model's next request) the test reads the sockets of the runner's whole
process tree: none may be listening or bound to a name, none may be one the command reached,
and the marker must not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import provider_config
from tests.sandbox.conftest import BACKENDS, PYTHON, RUNNER_PYTHON, Box, exec_backend_args
from tests.sandbox.support import commit_all
from tests.support.model_server import ModelServer, call, reply, tool_outputs

NETWORK_ON = ["-c", "sandbox_workspace_write.network_access=true"]

_PROBE = r"""
import array, errno, json, os, pickle, socket, stat, sys

marker = sys.argv[1]
table = {}
for line in open("/proc/net/unix").read().splitlines()[1:]:
    fields = line.split()
    if len(fields) >= 8:
        table[fields[7]] = (fields[6], bool(int(fields[3], 16) & 0x10000))
found = {name: inode for name, (inode, listening) in table.items() if listening}
for root in {os.environ.get("TMPDIR") or "/tmp", "/tmp", "/var/tmp", "/dev/shm"}:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    found.setdefault(path, table.get(path, ("?", False))[0])
            except OSError:
                pass


class Payload:
    def __reduce__(self):
        return (os.system, (f"touch {marker}",))


# Sockets other tests of this suite listen on at the same time, each to check that *its*
# sandbox refuses them: connecting would fail those tests, and none of them is the runner's.
FIXTURES = ("oi-sbx-", "oi-host-", "oiexec-test-host-", "/run/user/4000000")
results = {}
for name, inode in sorted(found.items()):
    if any(tag in name for tag in FIXTURES):
        continue
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1)
    try:
        sock.connect("\0" + name[1:] if name.startswith("@") else name)
    except OSError as exc:
        results[name] = [inode, errno.errorcode.get(exc.errno, str(exc.errno))]
        continue
    results[name] = [inode, "connected"]
    if name.startswith(("/tmp/", "/var/tmp/", os.environ.get("TMPDIR") or "/tmp")):
        # multiprocessing's fork server: four descriptors, then a pickle on the first.
        r, w = os.pipe()
        try:
            fds = array.array("i", [r, w, r, r])
            sock.sendmsg([bytes([4])], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            os.write(w, pickle.dumps(Payload()))
        except OSError:
            pass
    sock.close()
print("PROBE:" + json.dumps(results))
"""

_API_CALLER = """
import json, sys
from oiexec import Agent

config = json.loads(sys.argv[1])
turn = Agent(cwd=sys.argv[2], sandbox="workspace-write", config=config).start_thread().run("go")
print("TURN:" + json.dumps({"ok": turn.ok, "reason": turn.reason}))
"""


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(stat[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link.removeprefix("socket:[").removesuffix("]"))
    return inodes


def _unix_table() -> dict[str, tuple[bool, str | None]]:
    """inode -> (accepting connections, name), for this network namespace's Unix sockets."""
    table = {}
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        name = fields[7] if len(fields) >= 8 else None
        table[fields[6]] = (bool(int(fields[3], 16) & 0x10000), name)
    return table


class _Run:
    """What the model's second request saw: the probe's findings and the runner's sockets."""

    def __init__(self) -> None:
        self.pid = 0
        self.probe: dict[str, list[str]] | None = None
        self.runner: dict[str, tuple[bool, str | None]] = {}

    def step(self, body: dict[str, Any]) -> Any:
        output = "\n".join(tool_outputs(body).values())
        line = next((ln for ln in output.splitlines() if ln.startswith("PROBE:")), None)
        if line is not None:
            self.probe = json.loads(line.removeprefix("PROBE:"))
        # The runner is still going (waiting for this answer): its tree as it stands.
        table = _unix_table()
        for inode in _socket_inodes(_tree(self.pid)):
            if inode in table:
                self.runner[inode] = table[inode]
        return reply("done")


def _script(box: Box, name: str, text: str) -> Path:
    path = box.outside / name  # /var/tmp: readable from inside either backend
    path.write_text(text)
    path.chmod(0o644)
    return path


def _run(argv: list[str], box: Box, run: _Run, env: dict[str, str]) -> str:
    with subprocess.Popen(
        box.as_me(argv),
        cwd=box.ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        run.pid = proc.pid
        out, err = proc.communicate(timeout=180)
    return out + err


def _check(run: _Run, marker: Path, output: str) -> None:
    assert run.probe is not None, f"the probe did not run:\n{output}"
    exposed = {inode: how for inode, how in run.runner.items() if how[0] or how[1]}
    assert exposed == {}, f"runner sockets that can be reached: {exposed}"
    reached = {name for name, (inode, how) in run.probe.items() if inode in run.runner}
    assert reached == set(), f"the command reached the runner's sockets: {reached}"
    assert not marker.exists(), "the command's pickle ran outside the sandbox"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_task_and_an_api_turn_find_nothing_of_the_runner_to_connect_to(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    marker = box.outside / f"pwned-{uuid.uuid4().hex[:8]}"
    probe = _script(box, "probe.py", _PROBE)
    command = {"cmd": f"{PYTHON} {probe} {marker}", "yield_time_ms": 30_000}
    env = box.env(OPENINTERPRETER_HOME=str(box.root / "home"))

    # A batch task (its worktree is made from a commit).
    commit_all(box.ws)
    batch = _Run()
    model_server.enqueue(reply(tool_calls=[call("exec_command", command)]), batch.step)
    tasks = _script(box, "tasks.jsonl", json.dumps({"id": "t", "prompt": "probe"}) + "\n")
    out = _run(
        [RUNNER_PYTHON, "-m", "oiexec", "batch", str(tasks), "--out", str(box.root / "out"),
         "-s", "workspace-write", *exec_backend_args(backend), *NETWORK_ON,
         *model_server.config_args()],
        box, batch, env,
    )  # fmt: skip
    _check(batch, marker, out)
    summary = json.loads((box.root / "out" / "summary.json").read_text())
    assert [t["status"] for t in summary["tasks"]] == ["success"], out

    # An API turn.
    api = _Run()
    model_server.enqueue(reply(tool_calls=[call("exec_command", command)]), api.step)
    config: dict[str, Any] = {
        **provider_config(model_server),
        "sandbox_backend": backend,
        "sandbox_workspace_write": {"network_access": True},
    }
    if backend == "landlock":
        config["sandbox_require"] = "any"
    caller = _script(box, "caller.py", _API_CALLER)
    out = _run([RUNNER_PYTHON, str(caller), json.dumps(config), str(box.ws)], box, api, env)
    _check(api, marker, out)
    assert 'TURN:{"ok": true' in out, out
