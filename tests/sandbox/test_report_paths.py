"""Reports are written by the runner, outside the sandbox: a link a command planted at a
report's path must be replaced, not written through (`change.patch -> .git/hooks/pre-commit`
would turn the model's diff into a hook the host runs at its next commit)."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import BACKENDS, Box
from tests.support.model_server import ModelServer, call, reply

_REPORTS = {"change.patch": "--diff", "last.txt": "-o", "junit.xml": "--junit"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_links_at_report_paths_are_replaced(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    hook = box.ws / ".git" / "hooks" / "pre-commit"
    before = hook.read_bytes()
    plant = "; ".join(f"ln -s .git/hooks/pre-commit {name}" for name in _REPORTS)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"{plant}; echo x > new.txt"})]),
        reply("planted"),
    )
    flags = [arg for name, flag in _REPORTS.items() for arg in (flag, str(box.ws / name))]
    result = box.exec(model_server.config_args(), "workspace-write", backend, *flags)
    assert result.returncode == 0, result.stderr
    assert hook.read_bytes() == before
    for name in _REPORTS:
        path = box.ws / name
        assert not path.is_symlink() and path.is_file(), name
    assert "new.txt" in (box.ws / "change.patch").read_text()
    assert (box.ws / "last.txt").read_text() == "planted"
