"""A batch task that tightens the command line's sandbox runs tightened: under
`batch -s workspace-write`, a task with `sandbox = "read-only"` has its write refused while a
task without the key writes, in each backend, as root and unprivileged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.batch.conftest import write_tasks
from tests.sandbox.conftest import BACKENDS, Box, exec_backend_args
from tests.sandbox.support import commit_all
from tests.support.model_server import ModelServer, call, reply, tool_outputs


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tighter_task_runs_tightened(box: Box, model_server: ModelServer, backend: str) -> None:
    commit_all(box.ws)
    tasks = box.root / "tasks.jsonl"
    write_tasks(
        tasks,
        [
            {"id": "tight", "prompt": "write [task:tight]", "sandbox": "read-only"},
            {"id": "control", "prompt": "write [task:control]"},
        ],
    )
    out = box.root / "out"
    write = "echo hi > marker.txt && echo WROTE"
    for task in ("tight", "control"):
        model_server.route(
            f"[task:{task}]",
            reply(tool_calls=[call("exec_command", {"cmd": write})]),
            reply("done"),
        )
    done = box.interpreter(
        ["batch", str(tasks), "--out", str(out), "-j", "1", "-s", "workspace-write",
         *exec_backend_args(backend), *model_server.config_args()],
        timeout=180,
    )  # fmt: skip
    # The tightened task's write was refused: it did not do what it was asked, so it is not a
    # success and the batch fails (issue 23), while the control succeeded.
    assert done.returncode == 1, done.stderr + _logs(out)
    statuses = {
        t["id"]: t["status"] for t in json.loads((out / "summary.json").read_text())["tasks"]
    }
    assert statuses == {"tight": "write_refused", "control": "success"}, statuses
    outputs = {
        task: " ".join(
            " ".join(tool_outputs(r.body).values())
            for r in model_server.model_requests
            if f"[task:{task}]" in str(r.body)
        )
        for task in ("tight", "control")
    }
    # The control shows the write works under the ceiling; the tightened task's is refused.
    assert "WROTE" in outputs["control"], outputs
    assert "marker.txt" in (out / "control" / "diff.patch").read_text()
    assert "WROTE" not in outputs["tight"], outputs
    assert "Read-only file system" in outputs["tight"] or "denied" in outputs["tight"]
    assert "marker.txt" not in (out / "tight" / "diff.patch").read_text()


def _logs(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.glob("*/stderr.log"))
