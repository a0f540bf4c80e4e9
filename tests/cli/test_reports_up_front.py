"""A report path that cannot be written is a usage error (exit 2) naming the path and why,
before the model is called: under a regular file, in a directory the runner's user may not
write, on a read-only mount. It used to be found after the whole run, with exit 0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.sandbox.conftest import (  # noqa: F401  (the fixture lets `nobody` run this Python)
    IS_ROOT,
    REPO_ROOT,
    RUNNER_PYTHON,
    _unprivileged_can_run_python,
    as_user,
    unprivileged_ids,
)
from tests.support.model_server import ModelServer, reply

#: Who runs the CLI: as root, root (which passes every mode) and nobody; else this user.
USERS = ("root", "nobody") if IS_ROOT else ("user",)


def _failure_line(stdout: str) -> str:
    """The message of the one JSONL line a failure before the run prints with --json."""
    events = [json.loads(line) for line in stdout.splitlines()]
    assert [event["type"] for event in events] == ["turn.failed"], stdout
    message: str = events[0]["error"]["message"]
    return message


def test_a_report_under_a_regular_file_is_refused_before_the_model(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "reports"
    blocker.write_text("a file where a directory was expected\n")
    junit = tmp_path / "ok" / "junit.xml"
    diff = blocker / "change.patch"
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "--junit", str(junit), "--diff", str(diff), "go"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 2, result.stderr
    why = f"--diff {diff}: {blocker} is a file, not a directory"
    assert why in result.stderr
    assert "Traceback" not in result.stderr
    assert model_server.bodies == []
    assert why in _failure_line(result.stdout)
    assert why in junit.read_text()  # the reports that can be written say why


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory every user can reach (pytest's tmp_path is root's own), removed after."""
    path = Path(f"/var/tmp/oi-reports-{uuid.uuid4().hex[:10]}")
    path.mkdir(mode=0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("who", USERS)
def test_a_directory_the_user_cannot_write_is_refused_before_the_model(
    model_server: ModelServer, outside: Path, who: str
) -> None:
    work, locked = outside / "work", outside / "locked"
    work.mkdir()
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)  # not writable by its owner either (the umask aside)
    if who != "root":
        uid, gid = unprivileged_ids()
        os.chown(work, uid, gid)
    model_server.enqueue(reply("done"))
    junit = locked / "junit.xml"
    cli = [RUNNER_PYTHON, "-m", "oiexec", *exec_args(model_server), "--skip-git-repo-check"]
    argv = as_user([*cli, "-o", str(work / "last.txt"), "--junit", str(junit), "go"], who)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(work),
        "OPENINTERPRETER_HOME": str(outside / "home" if who == "root" else work / ".oi"),
        "PYTHONPATH": str(REPO_ROOT),
        "LANG": "C.UTF-8",
    }
    proc = subprocess.run(
        argv, cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if who == "root":
        # Root passes the directory's mode, so the report can be written: no false refusal.
        assert proc.returncode == 0, proc.stderr
        assert junit.read_text().startswith("<?xml")
        assert len(model_server.bodies) == 1
        return
    assert proc.returncode == 2, proc.stderr
    assert f"--junit {junit}: cannot write in its directory {locked}: Permission denied" in (
        proc.stderr
    )
    assert model_server.bodies == []
    assert "cannot write in its directory" in _failure_line(proc.stdout)
    assert list(locked.iterdir()) == []


def test_a_read_only_mount_is_refused_before_the_model(
    model_server: ModelServer, repo: Path, outside: Path
) -> None:
    """A read-only tmpfs mounted in a private mount namespace (root or, elsewhere, a user
    namespace): neither modes nor root's privileges make it writable."""
    mount = outside / "ro"
    mount.mkdir()
    junit = mount / "junit.xml"
    cli = [RUNNER_PYTHON, "-m", "oiexec", *exec_args(model_server), "--junit", str(junit), "go"]
    namespace = ["unshare", "--mount", "--propagation", "private"]
    if not IS_ROOT:
        namespace.append("--map-root-user")
    script = 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"'
    model_server.enqueue(reply("done"))
    proc = subprocess.run(
        [*namespace, "sh", "-c", script, str(mount), *cli],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 2 and ("unshare:" in proc.stderr or "mount:" in proc.stderr):
        pytest.skip(f"no private mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 2, proc.stderr
    assert f"--junit {junit}: cannot write in its directory {mount}: Read-only file system" in (
        proc.stderr
    )
    assert model_server.bodies == []
    assert "Read-only file system" in _failure_line(proc.stdout)
