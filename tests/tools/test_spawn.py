"""Commands are tied to the runner without forking it: setpriv sets the parent-death signal,
/bin/sh checks the runner was still there once it was set, and the command starts exactly as
subprocess would have started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from oiexec.core import programs
from oiexec.core.policy import PreparedCommand
from oiexec.tools import process
from oiexec.tools.spawn import ORPHANED_EXIT_CODE, tie

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or programs.find("setpriv", fallbacks=("/usr/bin/setpriv",)) is None,
    reason="needs Linux and util-linux setpriv",
)

REPO = Path(__file__).resolve().parents[2]

# Starts its argv tied to itself, prints the command's pid, and waits for it.
_RUNNER = """
import os, subprocess, sys
from pathlib import Path
from oiexec.tools.spawn import tie
argv, preexec = tie(sys.argv[1:], None, env=dict(os.environ), cwd=Path.cwd())
assert preexec is None, "fell back to a fork"
child = subprocess.Popen(argv, start_new_session=True)
print(child.pid, flush=True)
child.wait()
"""


def _alive(pid: int) -> bool:
    """A zombie waiting for init to reap it is dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")


def _wait(what: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _tied(argv: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> list[str]:
    tied, preexec = tie(argv, None, env=env or dict(os.environ), cwd=tmp_path)
    assert preexec is None
    return tied


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


@pytest.mark.parametrize(
    "argv",
    [["sleep", "300"], ["/bin/sh", "-c", "sleep 300 & wait"]],
    ids=["a program", "a sh script"],
)
def test_a_tied_command_dies_with_its_runner(tmp_path: Path, argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE
    )
    try:
        assert runner.stdout is not None
        pid = int(runner.stdout.readline())
        # Running the command (sleep, or the script's shell) means the tie is in place.
        want = "sleep" if argv[0] == "sleep" else "sh"
        assert _wait(lambda: want in os.path.basename(_exe(pid)) or "dash" in _exe(pid))
        assert _alive(pid)
        runner.kill()
        runner.wait()
        assert _wait(lambda: not _alive(pid), 3.0), "the command outlived its runner"
    finally:
        runner.kill()
        runner.wait()
        if runner.stdout is not None:
            runner.stdout.close()
        if "pid" in locals() and _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "argv",
    [["/bin/sh", "-c", "touch ran"], ["touch", "ran"]],
    ids=["a sh script", "a program"],
)
def test_a_command_whose_runner_is_gone_does_not_run(tmp_path: Path, argv: list[str]) -> None:
    """Started by another process than the runner (as if the runner had died before the
    signal was set and the command had been reparented), the command exits unrun."""
    tied = _tied(argv, tmp_path)
    # A shell in between: the tied command's parent is not this process.
    done = subprocess.run(["/bin/sh", "-c", '"$@"; exit $?', "sh", *tied], cwd=tmp_path)
    assert done.returncode == ORPHANED_EXIT_CODE
    assert not (tmp_path / "ran").exists()
    # Started by the runner itself it runs.
    assert subprocess.run(tied, cwd=tmp_path).returncode == 0
    assert (tmp_path / "ran").exists()


def test_a_tied_command_gets_its_environment_and_argv_unchanged(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SPACES": "a b  c",
        "LINES_": "one\ntwo",
        "QUOTES": "'\"$HOME`x`",
        "EQUALS": "a=b=c",
        "UNICODE": "été",
        "EMPTY": "",
    }
    printenv = ["sh", "-c", 'printf "%s\\n" "$0"; exec env -0', "argv0"]
    direct = subprocess.run(printenv, cwd=tmp_path, env=env, capture_output=True, check=True)
    tied = subprocess.run(
        _tied(printenv, tmp_path, env), cwd=tmp_path, env=env, capture_output=True, check=True
    )
    assert tied.stdout == direct.stdout
    assert b"argv0\n" in tied.stdout
    # PWD given is kept as given, even where the shell would have set it to the cwd.
    with_pwd = {**env, "PWD": "/nonexistent"}
    out = subprocess.run(
        _tied(["env"], tmp_path, with_pwd), cwd=tmp_path, env=with_pwd, capture_output=True
    )
    assert b"PWD=/nonexistent\n" in out.stdout


@pytest.mark.parametrize(
    "env_extra",
    [{"NOT-A-NAME": "1"}, {"IFS": ":"}, {"OPTIND": "x"}, {"PPID": "1"}],
    ids=["an invalid name", "IFS", "OPTIND", "PPID"],
)
def test_what_the_shell_would_change_falls_back_to_a_fork(
    tmp_path: Path, env_extra: dict[str, str]
) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env_extra}
    argv, preexec = tie(["env"], None, env=env, cwd=tmp_path)
    assert argv == ["env"] and preexec is not None
    out = subprocess.run(argv, env=env, preexec_fn=preexec, capture_output=True, check=True)
    [(name, value)] = env_extra.items()
    assert f"{name}={value}\n".encode() in out.stdout


def test_what_subprocess_would_refuse_to_start_falls_back_to_a_fork(tmp_path: Path) -> None:
    """So that it raises in the runner as before, instead of becoming the shell's exit 127
    (not found) or running a file without `#!` as a shell script."""
    script = tmp_path / "noshebang"
    script.write_text("touch ran\n")
    script.chmod(0o755)
    env = dict(os.environ)
    for argv, cwd in (
        ([str(tmp_path / "missing")], tmp_path),
        (["oiexec-no-such-program"], tmp_path),
        ([str(script)], tmp_path),
        (["./noshebang"], tmp_path),
    ):
        assert tie(argv, None, env=env, cwd=cwd)[1] is not None, argv
        with pytest.raises(OSError):
            subprocess.run(argv, cwd=cwd, env=env, preexec_fn=tie(argv, None, env=env, cwd=cwd)[1])
    assert not (tmp_path / "ran").exists()
    # Without PATH the shell's default search path is not subprocess's.
    assert tie(["true"], None, env={}, cwd=tmp_path)[1] is not None


def test_a_sandbox_preexec_fn_still_runs_after_the_tie(tmp_path: Path) -> None:
    mark = tmp_path / "inner"

    def inner() -> None:
        os.close(os.open(mark, os.O_CREAT | os.O_WRONLY, 0o600))

    argv, preexec = tie(["/bin/true"], inner, env={}, cwd=tmp_path)
    assert argv == ["/bin/true"] and preexec is not None
    assert subprocess.run(argv, preexec_fn=preexec).returncode == 0
    assert mark.exists()


def test_commands_spawn_without_a_preexec_fn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Python preexec_fn for a command that needs none: subprocess can then vfork instead
    of copying the runner's page tables."""
    _tied(["/bin/true"], tmp_path)  # this host's setpriv is probed once, here
    seen: list[Any] = []
    real = subprocess.Popen

    def spy(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        seen.append(kwargs.get("preexec_fn"))
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    session = process.ProcessSession(
        PreparedCommand(argv=["/bin/sh", "-c", "echo hi"], env=dict(os.environ), cwd=tmp_path)
    )
    try:
        assert session.wait(10) == 0
    finally:
        session.close()
    assert seen == [None]
