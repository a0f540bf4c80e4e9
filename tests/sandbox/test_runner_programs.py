"""What the runner executes outside the sandbox cannot be chosen from inside it: through the
real CLI, as root and as an unprivileged user, under bwrap and Landlock.

* A sandboxed command plants `git` and `rg` in the workspace's `.venv/bin`, first on the
  runner's PATH (absolute and relative): neither the run's own Grep/Glob and `--diff`, nor
  the next run's start, execute them.
* A hook or MCP command pointing into the workspace is refused before anything runs (the run
  and `interpreter mcp list`); a configured MCP server starts in an empty runner-owned
  directory; hooks see no provider key or token unless config passes it, and `python -m`
  in a hook does not import from the workspace.

The planted programs are checked to work when run directly, so a test passes only because
the runner did not start them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, REPO_ROOT, RUNNER_PYTHON, Box
from tests.sandbox.support import commit_all
from tests.support.model_server import ModelServer, call, reply, tool_outputs

MINI = REPO_ROOT / "tests" / "support" / "mcp_servers" / "mini.py"


def _planted(box: Box, name: str, real: str) -> str:
    """A program that records being run outside (where no sandboxed command can write),
    then does the real job so the run goes on as usual."""
    return f'#!/bin/sh\necho "{name} $*" >> {box.outside}/planted-ran\nexec {real} "$@"\n'


def _path(box: Box) -> str:
    return os.pathsep.join([str(box.ws / ".venv" / "bin"), ".venv/bin", os.environ["PATH"]])


def _exec(
    box: Box, server: ModelServer, mode: str, backend: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    provider = [*server.config_args(wire_api="messages"), "-c", 'harness="claude-code"']
    return box.exec(provider, mode, backend, *extra, env={"PATH": _path(box)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_git_and_rg_never_run_outside_the_sandbox(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    staging = box.outside / "staging"
    staging.mkdir()
    real = {name: shutil.which(name) or f"/usr/bin/{name}" for name in ("git", "rg")}
    for name in ("git", "rg"):
        (staging / name).write_text(_planted(box, name, real[name]))
        (staging / name).chmod(0o755)
    plant = f"mkdir -p .venv/bin && cp {staging}/git {staging}/rg .venv/bin/ && echo PLANTED"
    model_server.enqueue(
        reply(tool_calls=[call("Bash", {"command": plant}, call_id="plant")]),
        reply(
            tool_calls=[
                call("Grep", {"pattern": "hello", "path": str(box.ws)}, call_id="grep"),
                call("Glob", {"pattern": "**/*", "path": str(box.ws)}, call_id="glob"),
            ]
        ),
        reply("planted"),
        reply("second run"),
    )
    diff = box.outside / "change.diff"
    first = _exec(box, model_server, "workspace-write", backend, "--diff", str(diff))
    assert first.returncode == 0, first.stderr
    assert "PLANTED" in tool_outputs(model_server.bodies[1])["plant"]
    searched = tool_outputs(model_server.bodies[2])
    assert "README" in searched["grep"] and "README" in searched["glob"]
    assert ".venv/bin/git" in diff.read_text()  # the run's end ran git: the trusted one
    second = _exec(box, model_server, "read-only", backend, "--diff", str(diff))
    assert second.returncode == 0, second.stderr
    doctor = box.cli(["doctor", "--json"], backend=backend, env={"PATH": _path(box)})
    found = json.loads(doctor.stdout)["programs"]
    for name in ("git", "rg"):
        assert os.path.realpath(found[name]["path"]) == os.path.realpath(real[name])
    assert f"{box.ws / '.venv' / 'bin'} (inside {box.ws})" in found["git"]["skipped"]
    assert ".venv/bin (relative)" in found["rg"]["skipped"]
    assert not (box.outside / "planted-ran").exists()
    # The planted programs do run when started by name from that PATH.
    probe = subprocess.run(
        box.as_me(["git", "--version"]),
        cwd=box.ws,
        env={"PATH": _path(box)},
        capture_output=True,
        check=False,
    )
    assert probe.returncode == 0
    assert (box.outside / "planted-ran").read_text() == "git --version\n"


def _write_hooks(box: Box, command: str) -> None:
    home = box.root / "home"
    home.mkdir(exist_ok=True)
    group = {"hooks": [{"type": "command", "command": command}]}
    (home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [group]}}))
    if box.who != "root":
        uid = box.ws.stat().st_uid
        for path in (home, home / "hooks.json"):
            os.chown(path, uid, uid)


def _mcp_flags(command: str, *args: str, **keys: object) -> list[str]:
    flags = ["-c", f"mcp_servers.docs.command={json.dumps(command)}"]
    flags += ["-c", f"mcp_servers.docs.args={json.dumps(list(args))}"]
    for key, value in keys.items():
        flags += ["-c", f"mcp_servers.docs.{key}={json.dumps(value)}"]
    return flags


def test_hooks_and_mcp_commands_in_the_workspace_are_refused(
    box: Box, model_server: ModelServer
) -> None:
    marker = box.outside / "planted-ran"
    for relative in ("ci/guard.sh", "node_modules/.bin/docs-mcp"):
        script = box.ws / relative
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
        script.chmod(0o755)
        os.chown(script, box.ws.stat().st_uid, box.ws.stat().st_gid)

    _write_hooks(box, "./ci/guard.sh")
    hooked = _exec(box, model_server, "read-only", "bwrap")
    assert hooked.returncode == 3, hooked.stderr
    assert "SessionStart hook `./ci/guard.sh`" in hooked.stderr
    assert f"`./ci/guard.sh` lies inside {box.ws}" in hooked.stderr
    (box.root / "home" / "hooks.json").unlink()

    # `npx -y docs-mcp` would prefer ./node_modules/.bin/docs-mcp: a PATH entry into it too.
    flags = _mcp_flags("docs-mcp", required=True)
    node_path = {"PATH": f"{box.ws}/node_modules/.bin:{os.environ['PATH']}"}
    provider = model_server.config_args(wire_api="messages")
    served = box.exec(provider, "read-only", "bwrap", *flags, env=node_path)
    assert served.returncode == 3, served.stderr
    said = served.stdout + served.stderr  # a failed MCP start ends the turn: --json says so
    assert "command refused: `docs-mcp` is found first in" in said
    listing = box.interpreter(["mcp", "list", *flags], env=node_path)
    assert "command refused: `docs-mcp` is found first in" in listing.stdout + listing.stderr
    relative = _mcp_flags("./node_modules/.bin/docs-mcp", required=True, cwd=".")
    served = box.exec(provider, "read-only", "bwrap", *relative)
    assert served.returncode == 3, served.stderr
    assert "`./node_modules/.bin/docs-mcp` lies inside" in served.stdout + served.stderr
    notified = box.exec(provider, "read-only", "bwrap", "-c", 'notify=["ci/guard.sh"]')
    assert notified.returncode == 3, notified.stderr
    assert "notify command refused" in notified.stderr and "`ci/guard.sh`" in notified.stderr
    assert not marker.exists()
    assert model_server.model_requests == []


def test_mcp_servers_start_in_an_empty_dir_and_hooks_get_no_key(
    box: Box, model_server: ModelServer
) -> None:
    envfile, hookenv = box.outside / "server-env.json", box.outside / "hook-env.json"
    marker = box.outside / "planted-ran"
    # A module `python -m` would import from the hook's cwd, the workspace.
    (box.ws / "oiexec_probe.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    dump = f"import json,os; json.dump(dict(os.environ), open({str(hookenv)!r}, 'w'))"
    _write_hooks(box, f"{PYTHON} -c {json.dumps(dump)}; {PYTHON} -m oiexec_probe")
    secrets = {"OPENAI_API_KEY": "sk-runner-key-0123456789", "CI_TOKEN": "ci-token-0123456789"}
    flags = _mcp_flags(RUNNER_PYTHON, str(MINI), "--envfile", str(envfile), required=True)
    notifyenv = box.outside / "notify-env.json"
    notify = [PYTHON, "-c", dump.replace(str(hookenv), str(notifyenv))]
    flags += ["-c", f"notify={json.dumps(notify)}"]
    model_server.enqueue(reply("done"))
    provider = model_server.config_args(wire_api="messages", env_key="OPENAI_API_KEY")
    run = box.exec(provider, "workspace-write", "landlock", *flags, env=secrets)
    assert run.returncode == 0, run.stderr
    log = "\n".join(p.read_text() for p in (box.root / "home" / "logs").glob("*.log"))
    started = [json.loads(line)["line"] for line in log.splitlines() if "mini: starting in" in line]
    [cwd] = [Path(line.removeprefix("mini: starting in ")) for line in started]
    assert cwd.name.startswith("oiexec-mcp-cwd-") and not cwd.exists()  # removed at the end
    assert box.ws not in (cwd, *cwd.parents) and Path("/tmp") not in cwd.parents
    seen = json.loads(hookenv.read_text())
    assert "OPENAI_API_KEY" not in seen and "CI_TOKEN" not in seen
    assert seen["PYTHONSAFEPATH"] == "1"
    assert not marker.exists()  # `python -m oiexec_probe` found no module in the workspace
    assert "OPENAI_API_KEY" not in json.loads(envfile.read_text())
    notified = json.loads(notifyenv.read_text())
    assert "OPENAI_API_KEY" not in notified and "CI_TOKEN" not in notified

    # Passed explicitly, the token reaches the hook.
    model_server.enqueue(reply("done"))
    passed = box.exec(
        provider, "read-only", "landlock", "-c", 'hooks_env_vars=["CI_TOKEN"]', env=secrets
    )
    assert passed.returncode == 0, passed.stderr
    assert json.loads(hookenv.read_text())["CI_TOKEN"] == secrets["CI_TOKEN"]


def test_review_never_runs_the_reviewed_repositorys_git(
    box: Box, model_server: ModelServer
) -> None:
    """A PR ships `.venv/bin/git` at its root, first on PATH; review is started from a
    subdirectory, so only the repository root (found without git) covers it."""
    marker = box.outside / "planted-ran"
    planted = box.ws / ".venv" / "bin" / "git"
    planted.parent.mkdir(parents=True)
    planted.write_text(_planted(box, "git", shutil.which("git") or "/usr/bin/git"))
    planted.chmod(0o755)
    sub = box.ws / "sub"
    sub.mkdir()
    (sub / "file.txt").write_text("x\n")
    commit_all(box.ws)
    path = os.pathsep.join([str(planted.parent), os.environ["PATH"]])
    review = box.interpreter(
        ["review", *model_server.config_args(), "--uncommitted"], env={"PATH": path}, cwd=sub
    )
    assert review.returncode == 0, review.stderr
    assert "nothing to review" in review.stderr  # git ran: the clean tree was seen
    assert not marker.exists()
