"""Each batch example, run as its engine would run it: the exact scripts from the files (read
through tests/examples/sources.py, not retyped), with the engine's variables (matrix values,
CI_NODE_INDEX, JOB_COMPLETION_INDEX, ...), every shard in its own checkout, the engine's way of
carrying results from the shard jobs to the merge job, and the scripted model server behind
`interpreter`. Only the install steps are left out (the `interpreter` on PATH is this
checkout's); each test says which.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

from tests.examples import sources
from tests.examples.conftest import (
    API_KEY,
    GITHUB_BASH,
    Machine,
    assert_batch_complete,
    copy_tree,
    run_script,
    tasks_jsonl,
)

GITLAB_BASH = ["bash", "-eo", "pipefail", "-c"]
INSTALL_LINE = re.compile(r"^\s*(pip install|python -m venv|\"[^\"]*/pip\" install)")


def _without_install(lines: list[str]) -> str:
    kept = [line for line in lines if not INSTALL_LINE.match(line)]
    assert len(kept) < len(lines), "expected an install line to leave out"
    return "\n".join(kept)


def test_github_nightly_batch_runs_each_matrix_shard_then_merges(machine: Machine) -> None:
    """batch.yml: the shard job once per matrix value, each in its own checkout, its upload
    (with its exclusions) becoming one artifact; the merge job downloads them by pattern and
    merges. Left out: setup-python and the pip install step."""
    path = sources.CI / "batch.yml"
    doc = sources.load_yaml(path)
    shard_job, merge_job = doc["jobs"]["shard"], doc["jobs"]["merge"]
    run = sources.github_step(shard_job, runs="interpreter batch ")
    upload = sources.github_step(shard_job, uses="actions/upload-artifact")
    download = sources.github_step(merge_job, uses="actions/download-artifact")
    merge = sources.github_step(merge_job, runs="interpreter batch merge")
    merged_upload = sources.github_step(merge_job, uses="actions/upload-artifact")
    workflow_env = {key: str(value) for key, value in doc["env"].items()}
    machine.add_tasks(workflow_env["TASKS"])

    artifacts = machine.tmp / "artifacts"
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert len(shards) == int(workflow_env["SHARDS"])
    for shard in shards:
        context = {"matrix.shard": str(shard), "secrets.OPENAI_API_KEY": API_KEY}
        checkout = machine.checkout(f"shard-{shard}")
        step_env = {k: sources.expand(str(v), context) for k, v in run["env"].items()}
        proc = run_script(
            [*GITHUB_BASH, run["run"]],
            cwd=checkout,
            env=machine.env({**workflow_env, **step_env}),
        )
        assert proc.returncode == 0, proc.stderr
        # upload-artifact: the one directory given is the artifact's root; `!` lines exclude.
        lines = sources.expand(upload["with"]["path"], context).split()
        includes = [line for line in lines if not line.startswith("!")]
        excludes = [line[1:] for line in lines if line.startswith("!")]
        assert len(includes) == 1
        root = checkout / includes[0]
        prefix = includes[0].rstrip("/") + "/"
        copy_tree(
            root,
            artifacts / sources.expand(upload["with"]["name"], context),
            exclude=[pattern.removeprefix(prefix) + "**" for pattern in excludes],
        )

    merge_dir = machine.tmp / "jobs" / "merge"
    for artifact in sorted(artifacts.iterdir()):
        if fnmatch.fnmatch(artifact.name, download["with"]["pattern"]):
            copy_tree(artifact, merge_dir / download["with"]["path"] / artifact.name)
    proc = run_script([*GITHUB_BASH, merge["run"]], cwd=merge_dir, env=machine.env())
    assert proc.returncode == 0, proc.stderr
    assert_batch_complete(merge_dir / merged_upload["with"]["path"], machine)


def test_gitlab_parallel_batch_takes_its_shard_from_the_node_index_then_merges(
    machine: Machine,
) -> None:
    """gitlab-ci.yml: `parallel: N` jobs with CI_NODE_INDEX 1..N, each in its own checkout
    with the variables of the job and its template; their artifacts (with the exclusions)
    restored into the merge job's checkout. Left out: the template's before_script (pip and
    apt installs, sandbox doctor) and the merge job's pip install line."""
    doc = sources.load_yaml(sources.GITLAB_CI)
    job = doc["oiexec-batch"]
    merge_job = doc["oiexec-batch-merge"]
    template = doc[job["extends"]]
    variables = {**template.get("variables", {}), **job.get("variables", {})}
    script = "\n".join(job["script"])
    tasks = re.search(r"interpreter batch (\S+)", script)
    assert tasks is not None
    machine.add_tasks(tasks.group(1))

    merge_dir = machine.checkout("merge")
    total = job["parallel"]
    for index in range(1, total + 1):
        checkout = machine.checkout(f"node-{index}")
        env = {
            **variables,
            "CI_NODE_INDEX": str(index),
            "CI_NODE_TOTAL": str(total),
            "CI_PROJECT_DIR": str(checkout),
            "OPENAI_API_KEY": API_KEY,
        }
        proc = run_script([*GITLAB_BASH, script], cwd=checkout, env=machine.env(env))
        assert proc.returncode == 0, proc.stderr
        for pattern in job["artifacts"]["paths"]:
            for found in checkout.glob(pattern.rstrip("/")):
                relative = found.relative_to(checkout)
                excludes = [
                    p.removeprefix(pattern.rstrip("/").split("/")[0] + "/")
                    for p in job["artifacts"].get("exclude", [])
                ]
                copy_tree(found, merge_dir / relative, exclude=excludes)

    proc = run_script(
        [*GITLAB_BASH, _without_install(merge_job["script"])],
        cwd=merge_dir,
        env=machine.env({"CI_PROJECT_DIR": str(merge_dir)}),
    )
    assert proc.returncode == 0, proc.stderr
    assert_batch_complete(
        merge_dir / Path(merge_job["artifacts"]["reports"]["junit"]).parent, machine
    )


def test_kubernetes_indexed_job_reads_its_shard_from_the_pod_then_merges(
    machine: Machine,
) -> None:
    """kubernetes/batch.yaml: one pod per completion index, JOB_COMPLETION_INDEX set as the
    Job controller sets it and the container's own env (JOB_COMPLETIONS, the key from the
    Secret it names) as written; the ConfigMap's key is the tasks file's name; the results
    claim is one directory shared by every pod and the merge Job; each pod's emptyDir is its
    own. The container's script runs as written but for the venv and pip lines (the venv's
    `interpreter` is the shim)."""
    batch_path, merge_path = (
        sources.CI / "kubernetes" / "batch.yaml",
        sources.CI / "kubernetes" / "merge.yaml",
    )
    configmap = sources.kubernetes_document(batch_path, "ConfigMap")
    secret = sources.kubernetes_document(batch_path, "Secret")
    job = sources.kubernetes_document(batch_path, "Job")
    claims = machine.tmp / "claims"

    def pod(path: Path, name: str, extra_env: dict[str, str]) -> None:
        job_doc = sources.kubernetes_document(path, "Job")
        spec = job_doc["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        root = machine.tmp / "pods" / name
        mounts: dict[str, Path] = {}
        for volume_mount in container["volumeMounts"]:
            volume = next(v for v in spec["volumes"] if v["name"] == volume_mount["name"])
            if "persistentVolumeClaim" in volume:
                local = claims / volume["persistentVolumeClaim"]["claimName"]
            else:
                local = root / volume["name"]
            local.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                assert volume["configMap"]["name"] == configmap["metadata"]["name"]
                for key in configmap["data"]:
                    # The tasks the example ships clone from URLs; these work on the test repo.
                    (local / key).write_text(tasks_jsonl(repo=machine.repo))
            mounts[volume_mount["mountPath"]] = local

        def local_paths(text: str) -> str:
            for mount_path in sorted(mounts, key=len, reverse=True):
                text = text.replace(mount_path, str(mounts[mount_path]))
            return text

        env: dict[str, str] = {}
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = local_paths(item["value"])
            else:
                ref = item["valueFrom"]["secretKeyRef"]
                assert ref["name"] == secret["metadata"]["name"]
                assert ref["key"] in secret["stringData"]
                env[item["name"]] = API_KEY
        machine.shim(Path(env["HOME"]) / "venv" / "bin")
        script = local_paths(_without_install(container["args"][0].splitlines()))
        argv = [*container["command"], script]
        proc = run_script(argv, cwd=root, env=machine.env({**env, **extra_env}, minimal=True))
        assert proc.returncode == 0, f"{name}: {proc.stderr}"

    for index in range(job["spec"]["completions"]):
        pod(batch_path, f"batch-{index}", {"JOB_COMPLETION_INDEX": str(index)})
    pod(merge_path, "merge", {})
    assert_batch_complete(claims / "oiexec-results" / "merged", machine)


def test_crontab_line_runs_the_nightly_batch(machine: Machine) -> None:
    """crontab: the command as cron hands it to SHELL (`\\%` unescaped), with cron's PATH
    (the shim's directory first) and next to nothing else in the environment; the directory
    it changes into is a checkout holding tasks.jsonl and secrets.env."""
    (entry,) = sources.crontab(sources.CRONTABS[0])
    variables = sources.crontab_variables(sources.CRONTABS[0])
    workdir = re.match(r"cd (\S+) &&", entry.command)
    assert workdir is not None
    machine.add_tasks("tasks.jsonl")
    srv = machine.checkout("srv")
    (srv / "secrets.env").write_text(f"OPENAI_API_KEY={API_KEY}\n")
    command = entry.command.replace(workdir.group(1), str(srv))
    env = machine.env(minimal=True)
    env.update(SHELL=variables["SHELL"], PATH=f"{machine.bin}:{variables['PATH']}")
    proc = run_script([variables["SHELL"], "-c", command], cwd=Path(env["HOME"]), env=env)
    assert proc.returncode == 0, (srv / "runs" / "batch.log").read_text()
    (out,) = [p for p in (srv / "runs").iterdir() if p.is_dir()]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", out.name)  # one --out per day
    assert_batch_complete(out, machine)
    assert "note-3" in (srv / "runs" / "batch.log").read_text()


def test_systemd_service_runs_the_nightly_batch(machine: Machine) -> None:
    """oiexec-batch.service: ExecStart as systemd runs it (specifiers and $$ resolved, no
    shell around it), in WorkingDirectory, with only the variables of EnvironmentFile and a
    PATH (the shim's directory first)."""
    path = next(p for p in sources.SYSTEMD_UNITS if p.suffix == ".service")
    unit = sources.systemd_unit(path)
    argv = sources.systemd_exec_start(path)
    assert unit.get("Service", "WorkingDirectory").startswith("/")
    machine.add_tasks("tasks.jsonl")
    workdir = machine.checkout("srv")
    environment_file = machine.tmp / Path(unit.get("Service", "EnvironmentFile")).name
    environment_file.write_text(f"OPENAI_API_KEY={API_KEY}\n")
    env = machine.env(minimal=True)
    env["PATH"] = f"{machine.bin}:/usr/local/bin:/usr/bin:/bin"
    for line in environment_file.read_text().splitlines():
        key, _, value = line.partition("=")
        env[key] = value
    proc = run_script(argv, cwd=workdir, env=env)
    assert proc.returncode == 0, proc.stderr
    (out,) = list((workdir / "runs").iterdir())
    assert_batch_complete(out, machine)
    assert shlex.join(argv).count("interpreter batch") == 1
