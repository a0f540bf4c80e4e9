"""The provider key and secrets the runner holds are unreachable from a command by any route:
its own environment, `/proc/<ancestor>/environ`, the runner's memory, and output disguised
so that literal redaction would miss it (the audit read the key back reversed)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, SANDBOXED_MODES, Box
from tests.support.model_server import ModelServer, call, reply, tool_outputs

# Walks every process it can see: environ of all, memory of its ancestors (the runner among
# them). Prints each hit reversed, as an attacker hiding from redaction would. It is given
# the key reversed, so the command line of its parent shell does not contain the key itself.
_PROBE = r"""
import os, re, sys
needle = sys.argv[1][::-1].encode()
hits = set()
def note(where, data):
    if needle in data:
        hits.add(where)
pids = [p for p in os.listdir('/proc') if p.isdigit()]
for pid in pids:
    try:
        note('environ', open(f'/proc/{pid}/environ', 'rb').read())
    except OSError:
        pass
pid = os.getpid()
while pid > 1:
    try:
        pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])
        maps = open(f'/proc/{pid}/maps').read().splitlines()
        mem = open(f'/proc/{pid}/mem', 'rb')
    except (OSError, ValueError, IndexError):
        continue
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
        if 'rw' not in line.split()[1] or hi - lo > 1 << 28:
            continue
        try:
            mem.seek(lo)
            note('memory', mem.read(hi - lo))
        except (OSError, OverflowError, ValueError):
            pass
print('FOUND:' + ','.join(sorted(hits)) if hits else 'NOTHING', needle.decode()[::-1])
for name, value in os.environ.items():
    if value == needle.decode():
        print('ENV', name, value[::-1])
"""


def _key() -> str:
    return f"sk-oiexec-{uuid.uuid4().hex}"


def _exec(
    box: Box, server: ModelServer, mode: str, backend: str, key: str
) -> subprocess.CompletedProcess[str]:
    # A key variable whose name does not look secret: only the provider's `env_key` marks it.
    provider = server.config_args(env_key="PROVIDER_CRED")
    # Fresh: a forked runner's /proc/PID/environ would be its fork server's, without the key.
    return box.exec(provider, mode, backend, env={"PROVIDER_CRED": key}, fresh=True)


def _probe_call(box: Box, key: str) -> str:
    probe = box.outside / "probe.py"  # not under /tmp: bwrap gives commands a private one
    probe.write_text(_PROBE)
    probe.chmod(0o644)
    return f"{PYTHON} {probe} {key[::-1]}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_provider_key_is_unreachable_from_commands(
    box: Box, model_server: ModelServer, backend: str, mode: str
) -> None:
    key = _key()
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": _probe_call(box, key)})]),
        reply("done"),
    )
    result = _exec(box, model_server, mode, backend, key)
    assert result.returncode == 0, result.stderr
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "NOTHING" in output, output
    assert "FOUND" not in output and "ENV " not in output
    # Nothing the runner wrote carries the key in any form either.
    written = result.stdout + result.stderr + _session_text(box)
    assert key not in written and key[::-1] not in written


def test_the_probe_finds_a_key_where_nothing_guards_it(box: Box, model_server: ModelServer) -> None:
    """Control: a same-uid process holding the key in its environment is found, so
    `NOTHING` above means the runner's guards held, not that the probe is blind."""
    key = _key()
    holder = subprocess.Popen(box.as_me(["sleep", "30"]), env={"HELD": key})
    try:
        model_server.enqueue(
            reply(tool_calls=[call("exec_command", {"cmd": _probe_call(box, key)})]),
            reply("done"),
        )
        result = _exec(box, model_server, "danger-full-access", "bwrap", key)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0, result.stderr
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "FOUND:" in output and "environ" in output, output
    # The probe's reversed copy is masked in what was sent to the model and written out.
    assert key[::-1] not in output


def _session_text(box: Box) -> str:
    home = box.root / "home"
    return "".join(
        p.read_text(errors="replace") for p in home.rglob("*") if p.is_file()
    ) if home.exists() else ""  # fmt: skip


def test_interpreter_sandbox_applies_the_exec_environment_policy(box: Box) -> None:
    key = _key()
    script = 'env; cat /proc/$PPID/environ 2>/dev/null | tr "\\0" "\\n"'
    result = box.cli(
        ["-s", "read-only", "--", "/bin/sh", "-c", script],
        env={"OPENAI_API_KEY": key, "SOME_TOKEN": key[::-1], "PLAIN": "kept"},
        fresh=True,  # the runner's own environment block, as a fresh process has it
    )
    assert result.returncode == 0, result.stderr
    assert key not in result.stdout and key[::-1] not in result.stdout
    assert "PLAIN=kept" in result.stdout
    assert "OPENINTERPRETER_SANDBOX=read-only" in result.stdout


def test_runner_blanks_its_environment_block_and_is_not_dumpable(tmp_path: Path) -> None:
    key = _key()
    code = (
        "from oiexec.sandbox.selfguard import protect_runner, is_dumpable\n"
        "import os, json\n"
        "names = protect_runner(['PROVIDER_CRED'])\n"
        "block = open('/proc/self/environ', 'rb').read().decode()\n"
        "print(json.dumps({'names': sorted(names), 'dumpable': is_dumpable(),\n"
        "  'block': block, 'still': os.environ['PROVIDER_CRED']}))\n"
    )
    env = {"PROVIDER_CRED": key, "X_API_KEY": key, "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout)
    assert report["names"] == ["PROVIDER_CRED", "X_API_KEY"]
    assert report["dumpable"] is False
    assert key not in report["block"] and "PATH=/usr/bin:/bin" in report["block"]
    assert report["still"] == key  # the runner itself keeps its copy in os.environ
