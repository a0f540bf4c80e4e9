"""What hooks and notify may start and see (oiexec.extensions.outside): programs in the
workspace or found there first on PATH are refused, package runners that prefer the
workspace's copy too; credentials only when config passes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oiexec.core import programs
from oiexec.core.redact import clear_secrets, register_secret
from oiexec.extensions.outside import argv_refusal, command_refusal, outside_env


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(programs, "_STATE", programs._State())
    workspace = tmp_path / "ws"
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / "ci").mkdir()
    for path in (workspace / ".venv" / "bin" / "python3", workspace / "ci" / "guard.sh"):
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    programs.distrust([workspace])
    return workspace


SYSTEM_PATH = "/usr/bin:/bin"


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("./ci/guard.sh", "`./ci/guard.sh` lies inside"),
        ("cd ci && ./guard.sh", "`./guard.sh` lies inside"),
        ("echo start; FOO=1 exec ci/guard.sh --strict", "`ci/guard.sh` lies inside"),
        ("sh ci/guard.sh", "would run the script `ci/guard.sh`"),
        ("/bin/bash -x ./ci/guard.sh", "would run the script `./ci/guard.sh`"),
        ("python3 tools/check.py", "would run the script `tools/check.py`"),
        ("env A=1 timeout 5 ./ci/guard.sh", "`./ci/guard.sh` lies inside"),
        ("cat > /dev/null; $(./ci/guard.sh)", "`./ci/guard.sh` lies inside"),
        ("npx -y docs-mcp", "`npx -y` runs a package from the workspace's node_modules"),
        ("npm exec docs-mcp", "`npm exec` runs a package"),
        ("$PWD/ci/guard.sh", "/ci/guard.sh` lies inside"),
        ("if true; then . ./ci/env.sh; fi", "would run the script `./ci/env.sh`"),
    ],
)
def test_hook_commands_running_workspace_programs_are_refused(
    ws: Path, command: str, named: str
) -> None:
    refusal = command_refusal(command, ws, SYSTEM_PATH)
    assert refusal is not None and named in refusal, refusal


@pytest.mark.parametrize(
    "command",
    [
        "cat > /dev/null; echo ok",
        "/bin/sh -c 'echo hi' > out.txt",
        "python3 -c 'print(1)'",
        "python3 -m json.tool",
        "jq . package.json | grep name",
        "no-such-program --flag",
        "~/bin/guard.sh && $HOME/bin/guard.sh",
    ],
)
def test_hook_commands_of_trusted_programs_pass(
    ws: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/ci")
    assert command_refusal(command, ws, SYSTEM_PATH) is None


def test_a_venv_first_on_path_is_named(ws: Path) -> None:
    path = os.pathsep.join([str(ws / ".venv" / "bin"), SYSTEM_PATH])
    refusal = command_refusal("python3 -m mypkg", ws, path)
    assert refusal is not None
    assert f"found first in {ws / '.venv' / 'bin' / 'python3'}, inside {ws}" in refusal
    assert argv_refusal(["python3", "x"], ws, path) == refusal


def test_outside_env_keeps_credentials_only_when_passed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_secret("sk-the-provider-key-123")
    try:
        environ = {
            "PROVIDER_CRED": "sk-the-provider-key-123",  # no secret-looking name: its value
            "OPENAI_API_KEY": "sk-other",
            "CI_TOKEN": "t0ken-value",
            "HOME": "/home/u",
            "PATH": os.pathsep.join([str(ws / ".venv" / "bin"), ".venv/bin", SYSTEM_PATH]),
        }
        env = outside_env(environ, ["CI_TOKEN"])
    finally:
        clear_secrets()
    assert env == {
        "CI_TOKEN": "t0ken-value",
        "HOME": "/home/u",
        "PATH": SYSTEM_PATH,
        "PYTHONSAFEPATH": "1",
    }
