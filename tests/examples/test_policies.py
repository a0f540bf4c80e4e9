"""What every example promises its reader, checked on the files themselves: the task reaches
the runner through the environment (never pasted into a script), the agent always runs
sandboxed, actions are pinned by commit, tokens are minimal, and each file says which
secrets it needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.examples import sources

# `interpreter exec|review|batch` as a command (not `batch merge` or `batch report`, which
# run no agent; not inside a message).
AGENT_RUN = re.compile(
    r"(?:^|[\s|&;(])interpreter\s+(?:exec|review|batch(?!\s+(?:merge|report)))\b", re.M
)
SANDBOXED = re.compile(r"(--sandbox|-s)\s+(workspace-write|read-only|\"\$SANDBOX\")")
UNSANDBOXED = re.compile(r"--yolo|--dangerously|danger-full-access")
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")

SHELL_EXAMPLES = [
    *sources.GITHUB_WORKFLOWS,
    *sources.GITHUB_ACTIONS,
    sources.GITLAB_CI,
    *sources.KUBERNETES,
    *sources.CRONTABS,
    *sources.SYSTEMD_UNITS,
]


def _ids(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(sources.EXAMPLES)) for path in paths]


@pytest.mark.parametrize("path", SHELL_EXAMPLES, ids=_ids(SHELL_EXAMPLES))
def test_each_example_says_which_secrets_it_needs(path: Path) -> None:
    comment = sources.leading_comment(path)
    assert re.search(r"Secrets?:|[Nn]eeds no secret", comment), (
        f"{path.name} must say in its opening comment which secrets it needs"
    )


@pytest.mark.parametrize(
    "path",
    [*sources.GITHUB_WORKFLOWS, *sources.GITHUB_ACTIONS],
    ids=_ids([*sources.GITHUB_WORKFLOWS, *sources.GITHUB_ACTIONS]),
)
def test_no_expression_is_pasted_into_a_github_script(path: Path) -> None:
    """`${{ inputs.prompt }}` or `${{ github.event... }}` in `run:` is spliced into the script
    before the shell sees it: a prompt with a quote in it becomes code. Values go through
    `env:` and are used as "$VAR"."""
    doc = sources.load_yaml(path)
    pasted = [
        f"{job} / {step.get('name', step.get('id'))}: {match}"
        for job, step in sources.github_steps(doc)
        for match in re.findall(r"\$\{\{.*?\}\}", step.get("run", ""))
    ]
    assert pasted == []


@pytest.mark.parametrize("path", SHELL_EXAMPLES, ids=_ids(SHELL_EXAMPLES))
def test_every_agent_run_is_sandboxed(path: Path) -> None:
    runs = [c for c in sources.commands(path) if AGENT_RUN.search(c.script)]
    for command in runs:
        assert SANDBOXED.search(command.script), f"{command.where}: no --sandbox"
    for command in sources.commands(path):
        assert not UNSANDBOXED.search(command.script), f"{command.where}: unsandboxed"


def test_the_examples_run_the_agent_somewhere() -> None:
    # The sandbox test above passes vacuously for a file with no agent run; make sure the
    # pattern still finds the runs the examples are about.
    where = {
        path.name
        for path in SHELL_EXAMPLES
        for command in sources.commands(path)
        if AGENT_RUN.search(command.script)
    }
    assert {
        "exec.yml",
        "review.yml",
        "batch.yml",
        "action.yml",
        "gitlab-ci.yml",
        "batch.yaml",
        "crontab",
        "oiexec-batch.service",
    } <= where, where


def test_the_composite_action_refuses_an_unsandboxed_mode() -> None:
    action = sources.load_yaml(sources.GITHUB_ACTIONS[0])
    assert action["inputs"]["sandbox"]["default"] == "workspace-write"
    script = sources.github_step(action["runs"], runs="--sandbox")["run"]
    assert re.search(r"workspace-write \| read-only\) ;;\n\s+\*\).*exit 2", script)


@pytest.mark.parametrize(
    "path",
    [*sources.GITHUB_WORKFLOWS, *sources.GITHUB_ACTIONS],
    ids=_ids([*sources.GITHUB_WORKFLOWS, *sources.GITHUB_ACTIONS]),
)
def test_actions_are_pinned_by_commit_and_checkouts_keep_no_token(path: Path) -> None:
    doc = sources.load_yaml(path)
    text = path.read_text()
    for _job, step in sources.github_steps(doc):
        uses = step.get("uses")
        if uses is None or uses.startswith("./"):
            continue
        assert PINNED.match(uses), f"{uses} is not pinned to a full commit SHA"
        # The tag the SHA stands for, for whoever updates it.
        assert re.search(re.escape(uses) + r" # v\d", text), f"{uses}: add `# vX.Y.Z`"
        if uses.startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, path.name


@pytest.mark.parametrize("path", sources.GITHUB_WORKFLOWS, ids=_ids(sources.GITHUB_WORKFLOWS))
def test_workflows_grant_no_permission_by_default(path: Path) -> None:
    doc = sources.load_yaml(path)
    assert doc["permissions"] == {}, "top-level `permissions: {}`; jobs ask for what they need"
    for job_id, job in doc["jobs"].items():
        assert "permissions" in job, f"job {job_id} must list the permissions it needs"
