"""A batch task that could not do what was asked is not a `success`: one whose writes the
read-only sandbox refused is `write_refused`, one that had to change something
(`--require-change` for every task, or its own `require_change`) and did not is
`no_change` (exit 11)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from oiexec.core.errors import FAILURE_CLASSES, UsageError
from oiexec.runner.batch.tasks import parse_tasks
from tests.batch.conftest import run_batch, summary, write_tasks
from tests.conftest import FIX_PATCH
from tests.support.model_server import ModelServer, apply_patch_call, reply


def test_refused_and_unchanged_tasks_get_their_own_status(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            # The batch's --require-change would make a read-only task a usage error.
            {
                "id": "ro",
                "prompt": "fix [task:ro]",
                "repo": str(repo),
                "sandbox": "read-only",
                "require_change": False,
            },
            {"id": "same", "prompt": "look [task:same]", "repo": str(repo)},
            {
                "id": "free",
                "prompt": "look [task:free]",
                "repo": str(repo),
                "require_change": False,
            },
            {"id": "fix", "prompt": "fix [task:fix]", "repo": str(repo)},
        ],
    )
    server = model_server
    server.route("[task:ro]", reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("fixed"))
    server.route("[task:same]", reply("nothing to change"))
    server.route("[task:free]", reply("nothing to change"))
    server.route("[task:fix]", reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("fixed"))
    out = tmp_path / "out"

    result = run_batch(server, tasks, out, "--require-change", "--jobs", "2", cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    data = summary(out)
    by_id = {task["id"]: task for task in data["tasks"]}
    assert {key: task["status"] for key, task in by_id.items()} == {
        "ro": "write_refused",
        "same": "no_change",
        "free": "success",
        "fix": "success",
    }
    assert by_id["ro"]["exit_code"] == 0 and by_id["ro"]["refused_writes"] == 1
    assert "the sandbox (read-only) refused 1 write(s)" in by_id["ro"]["message"]
    assert by_id["same"]["exit_code"] == 11 and by_id["same"]["refused_writes"] == 0
    assert "--require-change" in by_id["same"]["message"]
    totals = data["totals"]
    assert (totals["write_refused"], totals["no_change"], totals["success"]) == (1, 1, 2)
    failures = {
        case.get("name"): (failure.get("type"), failure.get("message", "").split(" ")[0])
        for case in ET.parse(out / "junit.xml").getroot().iter("testcase")
        if (failure := case.find("failure")) is not None
    }
    # The type is the failure class (what to do about it); the message opens with the status.
    assert failures == {"ro": ("sandbox", "write_refused"), "same": ("task", "no_change")}
    assert totals["failure_classes"] == dict.fromkeys(FAILURE_CLASSES, 0) | {
        "sandbox": 1,
        "task": 1,
    }
    assert "Traceback" not in result.stderr


def test_require_change_is_a_boolean_task_key() -> None:
    path = Path("tasks.jsonl")
    [task] = parse_tasks(path, b'{"id": "a", "prompt": "p", "require_change": true}')
    assert task.require_change is True
    with pytest.raises(UsageError, match="`require_change` must be true or false, not a string"):
        parse_tasks(path, b'{"id": "a", "prompt": "p", "require_change": "yes"}')
