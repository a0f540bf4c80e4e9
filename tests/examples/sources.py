"""The example files under examples/, grouped by the engine that reads them, and the shell
commands inside them, taken out the way each engine takes them out.

Both the linter tests and the end-to-end tests read the examples through here, so what is
run is what a user copies: nothing is retyped.
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CI = EXAMPLES / "ci"

GITLAB_CI = CI / "gitlab-ci.yml"
#: GitHub Actions workflows: every .yml directly in examples/ci but the GitLab file.
GITHUB_WORKFLOWS = sorted(p for p in CI.glob("*.yml") if p != GITLAB_CI)
GITHUB_ACTIONS = sorted(CI.glob("*/action.yml"))
KUBERNETES = sorted((CI / "kubernetes").glob("*.yaml"))
SYSTEMD_UNITS = sorted([*(CI / "cron").glob("*.service"), *(CI / "cron").glob("*.timer")])
CRONTABS = [CI / "cron" / "crontab"]
TASK_FILES = sorted(CI.glob("*.jsonl"))
DOCS = sorted(EXAMPLES.rglob("*.md"))
#: Python API scripts: tests/api/test_example.py runs each end to end (ruff lints them in CI).
PYTHON_SCRIPTS = sorted((EXAMPLES / "python").glob("*.py"))

KINDS: dict[str, list[Path]] = {
    "GitHub workflow": GITHUB_WORKFLOWS,
    "GitHub action": GITHUB_ACTIONS,
    "GitLab CI": [GITLAB_CI],
    "Kubernetes": KUBERNETES,
    "systemd": SYSTEMD_UNITS,
    "crontab": CRONTABS,
    "tasks file": TASK_FILES,
    "documentation": DOCS,
    "Python API script": PYTHON_SCRIPTS,
}

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def load_yaml_all(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def leading_comment(path: Path) -> str:
    """The comment block a file opens with (where each example says what it needs)."""
    lines: list[str] = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# "))
    return "\n".join(lines)


def expand(template: str, context: Mapping[str, str]) -> str:
    """A GitHub expression template with the values a test gives; an expression the test did
    not foresee fails loudly instead of turning into an empty string."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression not in context:
            raise KeyError(f"no value for ${{{{ {expression} }}}} in {template!r}")
        return context[expression]

    return _EXPRESSION.sub(value, template)


# ---------------------------------------------------------------------------------------------
# GitHub Actions


def github_steps(doc: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(job id, step) of every step of a workflow, or ("runs", step) of a composite action."""
    if "jobs" in doc:
        for job_id, job in doc["jobs"].items():
            for step in job.get("steps", []):
                yield job_id, step
    else:
        for step in doc.get("runs", {}).get("steps", []):
            yield "runs", step


def github_step(job: Mapping[str, Any], *, runs: str | None = None, uses: str | None = None) -> Any:
    """The one step of `job` whose script contains `runs`, or which uses action `uses`."""
    found = [
        step
        for step in job["steps"]
        if (runs is not None and runs in step.get("run", ""))
        or (uses is not None and step.get("uses", "").partition("@")[0] == uses)
    ]
    assert len(found) == 1, f"expected one step with {runs or uses!r}, found {len(found)}"
    return found[0]


# ---------------------------------------------------------------------------------------------
# Shell commands in every kind of file


@dataclass(frozen=True)
class Command:
    """A shell script found in an example, with where it was found."""

    where: str
    script: str


def commands(path: Path) -> list[Command]:
    """Every shell script in an example file, as its engine would hand it to a shell."""
    if path in GITHUB_WORKFLOWS or path in GITHUB_ACTIONS:
        return [
            Command(f"{path.name}: {job} / {step.get('name', step.get('id', '?'))}", step["run"])
            for job, step in github_steps(load_yaml(path))
            if "run" in step
        ]
    if path == GITLAB_CI:
        found: list[Command] = []
        for name, job in load_yaml(path).items():
            if not isinstance(job, dict):
                continue
            for key in ("before_script", "script", "after_script"):
                if key in job:
                    found.append(Command(f"{path.name}: {name}.{key}", "\n".join(job[key])))
        return found
    if path in KUBERNETES:
        return [
            Command(f"{path.name}: {doc['metadata']['name']}/{container['name']}", script)
            for doc, container in kubernetes_containers(path)
            for script in [" ".join(container.get("command", []) + container.get("args", []))]
        ]
    if path in CRONTABS:
        return [Command(f"{path.name}: {entry.schedule}", entry.command) for entry in crontab(path)]
    if path in SYSTEMD_UNITS:
        unit = systemd_unit(path)
        if unit.has_option("Service", "ExecStart"):
            return [Command(f"{path.name}: ExecStart", systemd_exec_start(path)[-1])]
        return []
    return []


# ---------------------------------------------------------------------------------------------
# Kubernetes


def kubernetes_containers(path: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(Job, container) of every container of every Job in a manifest."""
    for doc in load_yaml_all(path):
        if doc.get("kind") == "Job":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                yield doc, container


def kubernetes_document(path: Path, kind: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [d for d in load_yaml_all(path) if d.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind} in {path.name}, found {len(found)}"
    return found[0]


# ---------------------------------------------------------------------------------------------
# cron and systemd


@dataclass(frozen=True)
class CrontabEntry:
    schedule: str
    command: str


CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def crontab(path: Path) -> list[CrontabEntry]:
    """The job lines of a crontab (comments and VAR=value lines left out): five schedule
    fields, then the command as cron hands it to the shell (`\\%` becomes `%`; an unescaped
    `%` would start the command's stdin, which no example wants)."""
    entries: list[CrontabEntry] = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#") or re.match(r"^\w+=", line):
            continue
        fields = line.split(None, 5)
        assert len(fields) == 6, f"a crontab line needs 5 schedule fields and a command: {line}"
        for field in fields[:5]:
            assert CRON_FIELD.match(field), f"bad cron schedule field {field!r} in: {line}"
        command = fields[5]
        assert re.search(r"(?<!\\)%", command) is None, f"unescaped % (cron's stdin): {line}"
        entries.append(CrontabEntry(" ".join(fields[:5]), command.replace("\\%", "%")))
    return entries


def crontab_variables(path: Path) -> dict[str, str]:
    variables: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^(\w+)=(.*)$", line)
        if match:
            variables[match.group(1)] = match.group(2).strip()
    return variables


def systemd_unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def systemd_exec_start(path: Path) -> list[str]:
    """ExecStart as the argv systemd runs: specifiers resolved (only `%%` is used), then
    split with systemd's quoting (the shell's, for what the examples use)."""
    raw = systemd_unit(path).get("Service", "ExecStart")
    assert re.search(r"%", raw.replace("%%", "")) is None, f"unexpected specifier: {raw}"
    assert re.search(r"\$", raw.replace("$$", "")) is None, f"systemd would expand: {raw}"
    return shlex.split(raw.replace("%%", "%").replace("$$", "$"))
