"""No set-user/group-id program can be made in a writable root: a root runner's command that
did `chmod u+s` on a file it wrote left a set-uid-root program in the host's workspace (the
sandbox's nosuid mounts do not travel with the file)."""

from __future__ import annotations

import stat

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, Box
from tests.support.model_server import ModelServer, call, reply

_MAKE = (
    "import os\n"
    "try:\n"
    "    os.close(os.open('made-setuid', os.O_CREAT | os.O_WRONLY, 0o4755))\n"
    "except OSError as exc:\n"
    "    print('open', exc.errno)\n"
    "for name, mode in (('chmod-setuid', 0o4755), ('chmod-setgid', 0o2755)):\n"
    "    open(name, 'w').close()\n"
    "    try:\n"
    "        os.chmod(name, mode)\n"
    "    except OSError as exc:\n"
    "        print(name, exc.errno)\n"
    "open('plain', 'w').close(); os.chmod('plain', 0o755); print('PLAIN_OK')\n"
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_set_id_bits_in_writable_roots(box: Box, backend: str) -> None:
    (box.outside / "mk.py").write_text(_MAKE)
    result = box.run("workspace-write", f"{PYTHON} {box.outside / 'mk.py'}; true", backend=backend)
    assert "PLAIN_OK" in result.stdout, result.stderr  # ordinary chmod still works
    assert stat.S_IMODE((box.ws / "plain").stat().st_mode) == 0o755
    for name in ("made-setuid", "chmod-setuid", "chmod-setgid"):
        path = box.ws / name
        mode = path.stat().st_mode if path.exists() else 0
        assert not mode & (stat.S_ISUID | stat.S_ISGID), f"{name}: {oct(mode)}"


def test_control_set_id_bits_land_without_a_sandbox(box: Box) -> None:
    (box.outside / "mk.py").write_text(_MAKE)
    box.run("danger-full-access", f"{PYTHON} {box.outside / 'mk.py'}", backend="bwrap")
    assert (box.ws / "chmod-setuid").stat().st_mode & stat.S_ISUID


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_set_id_bits_through_exec(box: Box, model_server: ModelServer, backend: str) -> None:
    script = box.outside / "mk.py"  # outside /tmp: bwrap's private /tmp would hide it
    script.write_text(_MAKE)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"{PYTHON} {script}"})]),
        reply("made"),
    )
    result = box.exec(model_server.config_args(), "workspace-write", backend)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((box.ws / "plain").stat().st_mode) == 0o755
    for name in ("made-setuid", "chmod-setuid", "chmod-setgid"):
        path = box.ws / name
        mode = path.stat().st_mode if path.exists() else 0
        assert not mode & (stat.S_ISUID | stat.S_ISGID), f"{name}: {oct(mode)}"
