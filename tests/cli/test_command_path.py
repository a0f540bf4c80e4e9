"""Commands see the project's tools, not the runner's: with the runner's virtualenv first on
PATH (activated, or `.venv/bin/interpreter` run by path), a command's `python3` is the one
the project set up, and `VIRTUAL_ENV` does not name the runner's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from oiexec.runner.policy import runner_install
from oiexec.tools.shell_env import HiddenInstall, hide_install
from tests.conftest import CliResult
from tests.support.model_server import ModelServer, call, reply

RUNNER_BIN = str(Path(sys.executable).parent)


def _project_venv(root: Path) -> Path:
    """A stand-in for the venv the project's CI set up: its `python3` says whose it is."""
    bin_dir = root / "project-venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "python3"
    script.write_text('#!/bin/sh\necho "project python3 $*"\n')
    script.chmod(0o755)
    return bin_dir


def test_commands_get_the_projects_python_not_the_runners(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    project_bin = _project_venv(tmp_path)
    probe = 'command -v python3; python3 -c ok; echo "VE=${VIRTUAL_ENV-unset}"'
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": probe})]), reply("done"))
    env = {
        **os.environ,
        # As `source .venv/bin/activate` of the runner's venv leaves it, before the project's.
        "PATH": os.pathsep.join([RUNNER_BIN, str(project_bin), os.environ["PATH"]]),
        "VIRTUAL_ENV": sys.prefix,
    }
    # The README's way: the entry point of the runner's venv, run by path.
    argv = [os.path.join(RUNNER_BIN, "interpreter"), "exec", "--json", "-s", "danger-full-access"]
    started = time.monotonic()
    proc = subprocess.run(
        [*argv, *model_server.config_args(), "run python"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert time.monotonic() - started < 60
    result = CliResult(proc.returncode, proc.stdout, proc.stderr)
    assert result.returncode == 0, result.stderr
    [item] = result.items("command_execution")
    output = item["aggregated_output"]
    found, ran, virtual_env = output.splitlines()
    assert (found, ran, virtual_env) == (
        str(project_bin / "python3"),
        "project python3 -c ok",
        "VE=unset",
    )
    assert RUNNER_BIN not in output


def test_a_project_virtualenv_and_other_entries_are_kept() -> None:
    hidden = HiddenInstall(prefix="/opt/runner", bin_dirs=("/opt/runner/bin",))
    env = hide_install(
        {
            "PATH": "/opt/runner/bin/:/work/.venv/bin:/opt/runner/bin:/usr/bin",
            "VIRTUAL_ENV": "/work/.venv",
            "PYTHONPATH": "/opt/runner/lib:/src",
            "PYTHONHOME": "/usr",
        },
        hidden,
    )
    assert env == {
        "PATH": "/work/.venv/bin:/usr/bin",
        "VIRTUAL_ENV": "/work/.venv",
        "PYTHONPATH": "/src",
        "PYTHONHOME": "/usr",
    }
    gone = hide_install(
        {
            "VIRTUAL_ENV": "/opt/runner",
            "VIRTUAL_ENV_PROMPT": "runner",
            "PYTHONPATH": "/opt/runner/lib",
            "PYTHONHOME": "/opt/runner",
        },
        hidden,
    )
    assert gone == {}


def test_the_runners_venv_inside_the_workspace_is_the_projects(tmp_path: Path) -> None:
    # The test interpreter runs from a virtualenv (as the suite's set-up makes it).
    assert sys.prefix != sys.base_prefix
    outside = runner_install(tmp_path)
    assert outside is not None
    assert outside.prefix == sys.prefix and RUNNER_BIN in outside.bin_dirs
    # A runner installed into the project's own venv: its tools are the project's.
    assert runner_install(Path(sys.prefix).parent) is None


def test_an_explicit_path_in_the_policy_wins() -> None:
    from oiexec.config.settings import ShellEnvironmentPolicy
    from oiexec.tools.shell_env import build_command_env

    hidden = HiddenInstall(prefix="/opt/runner", bin_dirs=("/opt/runner/bin",))
    common = {
        "base_env": {"PATH": "/opt/runner/bin:/usr/bin"},
        "provider_env_key": None,
        "sandbox_mode": "read-only",
        "network_disabled": True,
        "hidden": hidden,
    }
    assert build_command_env(ShellEnvironmentPolicy(), **common)["PATH"] == "/usr/bin"  # type: ignore[arg-type]
    policy = ShellEnvironmentPolicy(set={"PATH": "/opt/runner/bin:/usr/bin"})
    assert build_command_env(policy, **common)["PATH"] == "/opt/runner/bin:/usr/bin"  # type: ignore[arg-type]
