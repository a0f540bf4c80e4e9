"""Start-up cost of the native path: `interpreter exec` with the native harness never imports
the manifest tool adapters, the shared fs tools or jsonschema (about 100 ms together)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply

_HEAVY = ("oiexec.tools.adapters", "oiexec.tools.fs", "jsonschema")


def _imported(stderr: str) -> set[str]:
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_native_exec_does_not_import_the_manifest_tooling(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]),
        reply("done"),
    )
    result = run_cli(
        [*exec_args(model_server), "-c", 'harness="native"', "say hi"],
        cwd=repo,
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = _imported(result.stderr)
    assert "oiexec.tools.exec_command" in imported  # the profile really was taken
    heavy = sorted(n for n in imported if n.startswith(_HEAVY))
    assert not heavy, f"the native path imported {heavy}"


def test_manifest_harness_validates_arguments_lazily(model_server: ModelServer, repo: Path) -> None:
    """The jsonschema import moved to the first call; validation still refuses bad input."""
    model_server.enqueue(
        reply(tool_calls=[call("Read", {"file_path": 7})]),
        reply("done"),
    )
    result = run_cli(
        [*exec_args(model_server, wire="chat"), "-c", 'harness="claude-code"', "read"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    sent = model_server.bodies[-1]["messages"]
    tool_texts = [m["content"] for m in sent if m["role"] == "tool"]
    assert "InputValidationError" in str(tool_texts)
