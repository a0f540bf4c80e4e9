"""A machine as the examples expect to find it: `interpreter` on PATH (a shim for this
checkout's oiexec), its provider pointing at the scripted model server and reading its key
from OPENAI_API_KEY, a git repository to work on, and tasks scripted one route each."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.examples import sources
from tests.support.model_server import ModelServer, call, reply

GITHUB_BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]
#: What the examples' secret holds in these tests; every model request must carry it.
API_KEY = "sk-example-0123456789abcdef"
TASK_IDS = ["note-0", "note-1", "note-2", "note-3"]


@dataclass
class Machine:
    tmp: Path
    bin: Path
    repo: Path
    server: ModelServer

    def shim(self, directory: Path) -> Path:
        """An `interpreter` executable in `directory` (what `pip install oiexec` leaves)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "interpreter"
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oiexec "$@"\n')
        path.chmod(0o755)
        return path

    def env(
        self, extra: Mapping[str, str] | None = None, *, minimal: bool = False
    ) -> dict[str, str]:
        """The environment a job step sees: this test's (isolated HOME, no keys) or, for
        cron and systemd, next to nothing; `interpreter` first on PATH."""
        keep = ("HOME", "OPENINTERPRETER_HOME", "GIT_CONFIG_NOSYSTEM", "PYTHONDONTWRITEBYTECODE")
        base = {k: os.environ[k] for k in keep if k in os.environ} if minimal else dict(os.environ)
        base["PATH"] = f"{self.bin}{os.pathsep}{os.environ['PATH']}"
        return {**base, **(extra or {})}

    def checkout(self, name: str) -> Path:
        """A fresh clone of the repository, as a CI job's checkout step makes."""
        dest = self.tmp / "jobs" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(self.repo), str(dest)], check=True)
        return dest

    def add_tasks(self, relative: str, *, repo: Path | None = None) -> Path:
        """Writes the tasks file at `relative` in the repository and commits it."""
        path = self.repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tasks_jsonl(repo=repo))
        git(self.repo, "add", relative)
        git(self.repo, "commit", "-q", "-m", "tasks")
        return path


def tasks_jsonl(*, repo: Path | None = None) -> str:
    lines = []
    for task_id in TASK_IDS:
        task: dict[str, Any] = {"id": task_id, "prompt": f"Write the note (route {task_id}/)."}
        if repo is not None:
            task["repo"] = str(repo)
        lines.append(json.dumps(task))
    return "\n".join(lines) + "\n"


def run_script(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc


@pytest.fixture
def machine(tmp_path: Path, model_server: ModelServer, repo: Path, oi_home: Path) -> Machine:
    bin_dir = tmp_path / "bin"
    made = Machine(tmp=tmp_path, bin=bin_dir, repo=repo, server=model_server)
    made.shim(bin_dir)
    (oi_home / "config.toml").write_text(
        'model_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        'name = "Scripted"\n'
        f'base_url = "{model_server.base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "OPENAI_API_KEY"\n'
        "stream_idle_timeout_ms = 10000\n"
    )
    for task_id in TASK_IDS:
        model_server.route(
            f"route {task_id}/",
            reply(tool_calls=[call("exec_command", {"cmd": f"echo {task_id} > {task_id}.txt"})]),
            reply(f"wrote {task_id}.txt"),
        )
    return made


def assert_batch_complete(out: Path, machine: Machine) -> None:
    """What a user checks after the pipeline: one summary and one JUnit report naming every
    task once, all succeeded, each with a diff that applies to the untouched source, and
    the secret the example wired reached the provider on every request."""
    summary = json.loads((out / "summary.json").read_text())
    assert [t["id"] for t in summary["tasks"]] == TASK_IDS
    assert [t["status"] for t in summary["tasks"]] == ["success"] * len(TASK_IDS), summary
    assert summary["exit_code"] == 0
    cases = ET.parse(out / "junit.xml").getroot().iter("testcase")
    assert sorted(case.get("name") or "" for case in cases) == sorted(TASK_IDS)
    for task_id in TASK_IDS:
        patch = out / task_id / "diff.patch"
        assert f"+++ b/{task_id}.txt" in patch.read_text()
        subprocess.run(["git", "apply", "--check", str(patch)], cwd=machine.repo, check=True)
    assert git(machine.repo, "status", "--porcelain", "--untracked-files=no") == ""
    keys = {r.headers.get("authorization") for r in machine.server.model_requests}
    assert keys == {f"Bearer {API_KEY}"}
    assert machine.server.model.errors == []


def run_action(
    machine: Machine, checkout: Path, given: Mapping[str, str]
) -> tuple[int, dict[str, str]]:
    """The composite action's run step as GitHub runs a `shell: bash` step, its inputs (the
    defaults, then `given`) expanded into its `env:` exactly as written there, RUNNER_TEMP
    and GITHUB_OUTPUT as the runner provides them, the install step's venv holding the shim.
    Returns the step's exit code and the outputs it set."""
    action = sources.load_yaml(sources.GITHUB_ACTIONS[0])
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    inputs.update(given)
    step = sources.github_step(action["runs"], runs="interpreter exec")
    context = {f"inputs.{name}": value for name, value in inputs.items()}
    env = {key: sources.expand(str(value), context) for key, value in step["env"].items()}
    runner_temp = machine.tmp / "runner-temp"
    machine.shim(runner_temp / "oiexec-venv" / "bin")
    outputs = machine.tmp / "github-output"
    outputs.write_text("")
    env.update(RUNNER_TEMP=str(runner_temp), GITHUB_OUTPUT=str(outputs))
    proc = run_script([*GITHUB_BASH, step["run"]], cwd=checkout, env=machine.env(env))
    return proc.returncode, parse_outputs(outputs.read_text())


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's format: name=value lines and name<<DELIMITER blocks."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        block = re.match(r"^([\w-]+)<<(.+)$", line)
        if block:
            body = []
            for inner in lines:
                if inner == block.group(2):
                    break
                body.append(inner)
            values[block.group(1)] = "\n".join(body)
        else:
            name, _, value = line.partition("=")
            values[name] = value
    return values


def copy_tree(source: Path, dest: Path, *, exclude: Sequence[str] = ()) -> None:
    """Copies `source` to `dest`, leaving out paths (relative to `source`) matching any of
    the glob patterns in `exclude`."""
    excluded = {p for pattern in exclude for p in source.glob(pattern)}
    shutil.copytree(
        source,
        dest,
        dirs_exist_ok=True,
        ignore=lambda d, names: [n for n in names if Path(d, n) in excluded],
    )
