"""What the runner reads in its own process, attacked through the real CLI with a scripted
model, as root and as an unprivileged user, under bwrap and Landlock.

The runner reads outside the sandbox with its own environment (the provider key is in its
/proc/self/environ) and sees what the sandbox hides. A repository (or a command) plants
links to /proc, to a secret outside every root, to /dev/zero, FIFOs; the model then reads
them with the emulated harness's Read/Grep/Glob, AGENTS.md and its fallbacks are loaded for
`exec` and for `review`, and a 300 MiB file lands in the change for `--diff`. The effect is
checked outside: the secrets never reach the model server, the runner ends, and its memory
(and that of everything it starts) stays bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.sandbox.conftest import BACKENDS, IS_ROOT, RUNNER_PYTHON, Box, exec_backend_args
from tests.support.model_server import ModelServer, call, reply, tool_outputs

#: In the runner's environment only: what /proc/self/environ of the runner would give away
#: (under a name redaction does not know as a secret, so only the reader keeps it out).
ENV_SECRET = "OIEXEC-ENV-SECRET-5b1e"
#: In a file outside every root.
FILE_SECRET = "OIEXEC-FILE-SECRET-91c4"
#: Runs the CLI and reports the largest resident size of it and everything it started.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run([sys.executable, *sys.argv[1:]]).returncode\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stderr.write(f'\\nMAXRSS_KB={rss}\\n')\n"
    "sys.exit(code)\n"
)
#: The runner (a Python process) with its sandbox helpers and git, all well below this; an
#: unbounded read of /dev/zero or a 300 MiB patch held in memory goes far above it.
MAX_RSS_KB = 300 * 1024


def _cli(
    box: Box, args: list[str], *, extra_env: dict[str, str] | None = None, timeout: float = 180
) -> tuple[int, str, str, int]:
    """`interpreter <args>` in the workspace as the box's user: exit code, stdout, stderr and
    the peak resident size (KiB) of the runner and its descendants."""
    argv = box.as_me([RUNNER_PYTHON, "-c", _MEASURE, "-m", "oiexec", *args])
    env = box.env(OPENINTERPRETER_HOME=str(box.root / "home"), BUILD_LABEL=ENV_SECRET)
    proc = subprocess.run(
        argv,
        cwd=box.ws,
        env={**env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    marker = proc.stderr.rsplit("MAXRSS_KB=", 1)
    assert len(marker) == 2, proc.stderr
    return proc.returncode, proc.stdout, marker[0], int(marker[1].strip())


def _plant(box: Box) -> Path:
    """What an untrusted repository ships: links to /proc, to a secret outside, to a device,
    and a FIFO; returns the secret file."""
    secret = box.outside / "secret.txt"
    secret.write_text(f"{FILE_SECRET}\n")
    secret.chmod(0o644)
    ws = box.ws
    (ws / "AGENTS.md").symlink_to("/proc/self/environ")
    (ws / "CLAUDE.md").symlink_to(secret)  # a fallback name
    (ws / "out").symlink_to(secret)
    (ws / "outdir").symlink_to(box.outside)
    (ws / "zero").symlink_to("/dev/zero")
    os.mkfifo(ws / "fifo")
    if box.who != "root" and IS_ROOT:
        owner = ws.stat()
        for name in ("AGENTS.md", "CLAUDE.md", "out", "outdir", "zero", "fifo"):
            os.lchown(ws / name, owner.st_uid, owner.st_gid)
    return secret


def _assert_nothing_leaked(server: ModelServer) -> None:
    sent = json.dumps(server.bodies)
    assert ENV_SECRET not in sent
    assert FILE_SECRET not in sent


def _fallbacks() -> list[str]:
    return ["-c", 'project_doc_fallback_filenames=["CLAUDE.md"]']


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_models_reads_and_agents_md_stay_inside(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    _plant(box)
    ws = box.ws
    # A sandboxed command plants more: a link out and a FIFO made during the run.
    plant = f"ln -s {box.outside}/secret.txt planted && mkfifo fifo2 && echo PLANTED"
    reads = {
        "ok": ws / "README",
        "dev_zero": Path("/dev/zero"),
        "zero_link": ws / "zero",
        "fifo": ws / "fifo",
        "fifo2": ws / "fifo2",
        "planted": ws / "planted",
        "out": ws / "out",
        "via_dir": ws / "outdir" / "secret.txt",
        "agents": ws / "AGENTS.md",
        "environ": Path("/proc/self/environ"),
    }
    model_server.enqueue(
        reply(tool_calls=[call("Bash", {"command": plant}, call_id="plant")]),
        reply(
            tool_calls=[
                *(call("Read", {"file_path": str(p)}, call_id=k) for k, p in reads.items()),
                call(
                    "Grep",
                    {"pattern": "OIEXEC-", "path": str(ws), "output_mode": "content"},
                    call_id="grep_ws",
                ),
                call(
                    "Grep", {"pattern": "OIEXEC-", "path": str(ws / "outdir")}, call_id="grep_out"
                ),
                call("Grep", {"pattern": "OIEXEC-", "path": str(ws / "planted")}, call_id="grep_f"),
                call("Glob", {"pattern": "*", "path": str(ws / "outdir")}, call_id="glob_out"),
            ]
        ),
        reply("done"),
    )
    code, _out, err, rss = _cli(
        box,
        [
            "exec", "--json", "-s", "workspace-write", *exec_backend_args(backend),
            *model_server.config_args(wire_api="messages"), "-c", 'harness="claude-code"',
            *_fallbacks(), "go",
        ],
    )  # fmt: skip
    assert code == 0, err
    assert rss < MAX_RSS_KB, f"runner peaked at {rss} KiB"
    _assert_nothing_leaked(model_server)
    assert "PLANTED" in tool_outputs(model_server.bodies[1])["plant"]
    outputs = tool_outputs(model_server.bodies[2])
    assert "hello" in outputs["ok"]  # the tools still read the workspace
    for key in ("dev_zero", "zero_link", "fifo", "fifo2"):
        assert "regular file" in outputs[key] or "outside the workspace" in outputs[key], key
    for key in ("planted", "out", "via_dir", "agents"):
        assert "links out of them are not followed" in outputs[key], outputs[key]
    assert "kernel file system" in outputs["environ"]
    assert "links out of them are not followed" in outputs["grep_out"]
    assert "links out of them are not followed" in outputs["glob_out"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_review_of_a_hostile_repository_sends_no_secret(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    _plant(box)
    (box.ws / "change.py").write_text("x = 1\n")

    def finding(path: str) -> dict[str, object]:
        location = {"absolute_file_path": path, "line_range": {"start": 1, "end": 1}}
        return {
            "title": "[P1] look",
            "body": "b",
            "confidence_score": 0.9,
            "priority": 1,
            "code_location": location,
        }

    answer = {
        "findings": [finding("zero"), finding("fifo")],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "x",
        "overall_confidence_score": 0.5,
    }
    model_server.enqueue(reply(json.dumps(answer)))
    code, _out, err, rss = _cli(
        box,
        [
            "review", *exec_backend_args(backend), *model_server.config_args(),
            *_fallbacks(), "--uncommitted",
        ],
    )  # fmt: skip
    assert code == 7, err  # the review gate: the findings block, as they should
    assert rss < MAX_RSS_KB
    assert len(model_server.bodies) == 1
    _assert_nothing_leaked(model_server)
    # The findings on the device link and the FIFO were located without hanging the runner.
    assert "review: 2 finding(s)" in err


def test_a_fallback_name_that_is_a_path_is_a_config_error(
    model_server: ModelServer, tmp_path: Path
) -> None:
    for name in ("/proc/self/environ", "../../etc/passwd"):
        result = run_cli(
            [
                "exec", "--json", *model_server.config_args(),
                "-c", f"project_doc_fallback_filenames={json.dumps([name])}", "go",
            ],
            cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 3, result.stderr
        assert "project_doc_fallback_filenames" in result.stderr
        assert "not a plain file name" in result.stderr
        assert "Traceback" not in result.stderr
    assert not model_server.bodies


def test_a_huge_file_in_the_change_is_listed_not_inlined(
    box: Box, model_server: ModelServer
) -> None:
    """The patch is made after the sandbox is gone, the same under every backend: run under
    the default one (bwrap here), as root and as an unprivileged user. Snapshotting 300 MiB
    is git's slow part; the patch and the memory are what is bounded."""
    size = 300 * 1024 * 1024
    make = f"truncate -s {size} big.bin && echo small > small.txt && echo MADE"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": make}, call_id="make")]),
        reply("done"),
    )
    patch_path = box.root / "change.patch"
    code, out, err, rss = _cli(
        box,
        [
            "exec", "--json", "-s", "workspace-write", *model_server.config_args(),
            "--diff", str(patch_path), "go",
        ],
    )  # fmt: skip
    assert code == 0, err
    assert "MADE" in tool_outputs(model_server.bodies[1])["make"]
    assert rss < MAX_RSS_KB, f"runner peaked at {rss} KiB"
    patch = patch_path.read_bytes()
    assert len(patch) < 64 * 1024
    header = patch.split(b"diff --git", 1)[0].decode()
    assert f"big.bin (added, {size} bytes)" in header and "not inlined" in header
    assert b"diff --git a/small.txt b/small.txt" in patch
    assert b"diff --git a/big.bin" not in patch
    # And the run says so (a warning on the event stream).
    assert "big.bin not inlined" in out + err


def _deny_config(box: Box) -> None:
    home = box.root / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        'default_permissions = "t"\n'
        "[permissions.t]\n"
        'extends = ":workspace"\n'
        "[permissions.t.filesystem]\n"
        '":workspace_roots" = { "." = "write", "private" = "deny" }\n'
    )
    if box.who != "root" and IS_ROOT:
        owner = box.ws.stat()
        for path in (home, home / "config.toml"):
            os.chown(path, owner.st_uid, owner.st_gid)


def test_agents_md_never_reads_a_denied_path(box: Box, model_server: ModelServer) -> None:
    """A deny rule hides a file from commands; an in-tree AGENTS.md linking to it must not
    hand it to the model either (bwrap: the only backend that enforces deny rules)."""
    _deny_config(box)
    (box.ws / "private").mkdir()
    (box.ws / "private" / "key").write_text(f"{FILE_SECRET}\n")
    (box.ws / "AGENTS.md").symlink_to("private/key")
    model_server.enqueue(reply("done"))
    args: list[str] = ["exec", "--json", *exec_backend_args("bwrap"), *model_server.config_args()]
    code, _out, err, _rss = _cli(box, [*args, "go"])
    assert code == 0, err
    _assert_nothing_leaked(model_server)
    # A harness reading in-process cannot run under deny rules at all (reads must go through
    # the sandbox): refused before any request.
    before = len(model_server.bodies)
    code, _out, err, _rss = _cli(box, [*args, "-c", 'harness="claude-code"', "go"])
    assert code == 3, err
    assert len(model_server.bodies) == before
