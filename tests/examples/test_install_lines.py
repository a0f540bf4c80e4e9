"""Every example installs oiexec the one way that works until a release is on PyPI: from its
repository at a pinned ref, the requirement held in one variable per file (the composite
action's `package` input default, `OIEXEC_PACKAGE` elsewhere), all the same. The pinned
requirement, pointed at this checkout, is resolved by pip offline: no index, no network."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from oiexec import __version__
from tests.examples import sources

#: Where the examples say the repository is (a placeholder owner: no repository URL is
#: published yet; `your_org` is not a valid GitHub account name, so it can never be someone
#: else's repository).
REPOSITORY = "git+https://github.com/your_org/oiexec"
SCANNED = [
    *sources.GITHUB_WORKFLOWS,
    *sources.GITHUB_ACTIONS,
    sources.GITLAB_CI,
    *sources.KUBERNETES,
    *sources.SYSTEMD_UNITS,
    *sources.CRONTABS,
]


def _pip_installs(script: str) -> list[list[str]]:
    """The operands of each `pip install` in a script (options and their values left out)."""
    found = []
    for line in script.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for index, word in enumerate(words[:-1]):
            if os.path.basename(word) in ("pip", "pip3") and words[index + 1] == "install":
                found.append(_operands(words[index + 2 :]))
    return found


def _operands(words: list[str]) -> list[str]:
    operands, skip = [], False
    for word in words:
        if word in (";", "&&", "||", "|"):
            break
        if skip:
            skip = False
        elif word in ("-r", "--requirement", "-c", "--constraint"):
            skip = True
        elif word.startswith("-") and word not in ("-e", "--editable"):
            continue
        elif word not in ("-e", "--editable"):
            operands.append(word)
    return operands


def _package_values(path: Path) -> list[str]:
    """The requirement a file defines for its install lines."""
    if path in sources.GITHUB_ACTIONS:
        action = sources.load_yaml(path)
        step = sources.github_step(action["runs"], runs='pip" install')
        assert step["env"]["PACKAGE"] == "${{ inputs.package }}"
        return [action["inputs"]["package"]["default"]]
    if path == sources.GITLAB_CI:
        return [sources.load_yaml(path)["variables"]["OIEXEC_PACKAGE"]]
    if path in sources.KUBERNETES:
        return [
            entry["value"]
            for _, container in sources.kubernetes_containers(path)
            for entry in container.get("env", [])
            if entry["name"] == "OIEXEC_PACKAGE"
        ]
    return [sources.load_yaml(path)["env"]["OIEXEC_PACKAGE"]]


def _pinned() -> str:
    [action] = sources.GITHUB_ACTIONS
    return str(sources.load_yaml(action)["inputs"]["package"]["default"])


def test_every_install_line_installs_the_one_pinned_requirement() -> None:
    pinned = _pinned()
    requirement = Requirement(pinned)
    assert requirement.name == "oiexec"
    # A release tag of this version: bumping the version without the examples fails here.
    assert requirement.url == f"{REPOSITORY}@v{__version__}"
    installing = []
    for path in SCANNED:
        lines = [ops for command in sources.commands(path) for ops in _pip_installs(command.script)]
        ours = [ops for ops in lines if ops != [".[test]"]]  # fix-tests.yml: the project itself
        if not ours:
            continue
        installing.append(path.name)
        variable = "$PACKAGE" if path in sources.GITHUB_ACTIONS else "$OIEXEC_PACKAGE"
        assert all(ops == [variable] for ops in ours), (path.name, ours)
        values = _package_values(path)
        assert values and set(values) == {pinned}, (path.name, values)
    # Every example that runs the runner installs it (fix-tests.yml through the action).
    assert set(installing) == {
        "action.yml",
        "batch.yml",
        "nightly-models.yml",
        "exec.yml",
        "review.yml",
        "gitlab-ci.yml",
        "batch.yaml",
        "merge.yaml",
    }


def test_the_pinned_requirement_resolves_against_this_checkout(tmp_path: Path) -> None:
    """pip clones this repository at HEAD and builds the package's metadata, as it would the
    pinned tag from the real repository, offline (`--no-index`, the build backend from this
    environment)."""
    root = sources.ROOT
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    pinned = _pinned()
    assert pinned.startswith(f"oiexec @ {REPOSITORY}@")
    # pip's URL check wants a host in a git+file URL (git reads `localhost` as this machine).
    local = f"oiexec @ git+file://localhost{root.as_posix()}@{head}"
    report = tmp_path / "report.json"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
         "--no-build-isolation", "--quiet", "--report", str(report), local],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert elapsed < 60
    [install] = json.loads(report.read_text())["install"]
    metadata: dict[str, Any] = install["metadata"]
    assert (metadata["name"], metadata["version"]) == ("oiexec", __version__)
    assert install["download_info"]["vcs_info"]["commit_id"] == head
