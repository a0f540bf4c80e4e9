"""The CI examples parse, and every `interpreter` command in them uses options that exist."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from oiexec.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return data


def scripts(node: Any) -> list[str]:
    """Every shell line in a workflow (`run:`) or a GitLab job (`script:`, `before_script:`)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "run" and isinstance(value, str):
                found += value.splitlines()
            elif key in {"script", "before_script"} and isinstance(value, list):
                found += [str(v) for v in value]
            else:
                found += scripts(value)
    elif isinstance(node, list):
        for value in node:
            found += scripts(value)
    return found


def interpreter_commands(name: str) -> list[list[str]]:
    commands = []
    for line in scripts(load(name)):
        # Only the command itself: drop redirections and `|| ...` / `&& ...` tails.
        for separator in (" > ", " || ", " && "):
            line = line.split(separator)[0]
        words = shlex.split(line)
        if words[:1] == ["interpreter"]:
            commands.append(words[1:])
    return commands


def _root() -> click.Context:
    """The root context as `interpreter` makes it: with the CLI's context settings (`-h`
    beside `--help`). click caches each command's help option from the first context it
    sees; a bare `click.Context(cli)` would leave `--help` alone cached for later tests."""
    return cli.make_context("interpreter", [], resilient_parsing=True)


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    ctx = _root()
    command: click.Command = cli
    rest = list(words)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def check_parses(words: list[str], glob_target: str = ".") -> click.Command:
    command, rest = resolve(words)
    # A shell glob (`shard-*/`) names directories the job will have; stand in an existing one.
    rest = [glob_target if any(c in word for c in "*?[") else word for word in rest]
    with command.make_context(command.name, rest, parent=_root(), resilient_parsing=False) as ctx:
        assert ctx.params is not None
    return command


@pytest.mark.parametrize("name", ["review.yml", "exec.yml", "gitlab-ci.yml"])
def test_every_interpreter_command_parses(name: str, tmp_path: Path) -> None:
    commands = interpreter_commands(name)
    assert commands, f"no interpreter command in {name}"
    for words in commands:
        check_parses(words, glob_target=str(tmp_path))


def test_review_workflow_gates_and_uploads_sarif() -> None:
    workflow = load("review.yml")
    steps = workflow["jobs"]["review"]["steps"]
    review = next(words for words in interpreter_commands("review.yml") if words[0] == "review")
    assert "--base" in review and "--sarif" in review
    sarif = review[review.index("--sarif") + 1]
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == sarif
    # Least privilege: nothing at the top, the review job asks for what the upload needs.
    assert workflow["permissions"] == {}
    assert workflow["jobs"]["review"]["permissions"]["security-events"] == "write"
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_exec_workflow_keeps_junit_and_diff() -> None:
    (words,) = [w for w in interpreter_commands("exec.yml") if w[0] == "exec"]
    assert "--junit" in words and "--diff" in words


def test_gitlab_review_reports_junit() -> None:
    job = load("gitlab-ci.yml")["oiexec-review"]
    review = next(w for w in interpreter_commands("gitlab-ci.yml") if w[0] == "review")
    assert job["artifacts"]["reports"]["junit"] == review[review.index("--junit") + 1]


def test_a_wrong_flag_would_be_caught() -> None:
    with pytest.raises(click.NoSuchOption):
        check_parses(["review", "--uncommitted", "--fail-at", "P1"])
