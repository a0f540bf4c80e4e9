"""`interpreter sandbox -- CMD`: one command under the sandbox policy, as exec would run it.

The command gets the environment exec gives model-run commands (the project's
`[shell_environment_policy]`, secret-looking variables and the provider key removed), and
this process is guarded the same way (non-dumpable, secrets blanked in its environment
block), so trying a command here shows what the model would be able to reach.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from oiexec.config.loader import ConfigInputs, load_config
from oiexec.config.providers import resolve_provider
from oiexec.core.errors import OiexecError, SandboxUnavailable
from oiexec.core.policy import (
    BackendChoice,
    RequireChoice,
    Sandbox,
    SandboxLimits,
    SandboxMode,
    SandboxPolicy,
    resolve_require,
)
from oiexec.runner.policy import command_env
from oiexec.sandbox import get_sandbox
from oiexec.sandbox.selfguard import protect_runner
from oiexec.tools.spawn import tied_to_runner

Say = Callable[[str], None]


def flag_policy(
    mode: SandboxMode,
    cwd: Path,
    *,
    add_dirs: tuple[str, ...] = (),
    network: bool = False,
    require: RequireChoice = "auto",
    backend: BackendChoice = "auto",
    limits: SandboxLimits | None = None,
) -> SandboxPolicy:
    """The policy `interpreter sandbox` flags describe; unlike exec's, no config is read."""
    return SandboxPolicy(
        mode=mode,
        cwd=cwd,
        extra_roots=tuple(Path(d).resolve() for d in add_dirs),
        network_access=network,
        require=resolve_require(require),
        backend=backend,
        limits=limits or SandboxLimits(),
    )


def sandbox_command_env(policy: SandboxPolicy) -> dict[str, str]:
    """The environment exec would give a model-run command in `policy.cwd`."""
    config = load_config(ConfigInputs(cwd=policy.cwd))
    try:
        env_key = resolve_provider(config.settings)[1].env_key
    except OiexecError:
        env_key = None  # no usable provider here: only the name rules apply
    env = command_env(config.settings, policy, provider_env_key=env_key)
    protect_runner([env_key or ""])
    return dict(env)


#: The shell's status for a command that does not exist.
COMMAND_NOT_FOUND = 127


def missing_command(command: list[str], cwd: Path, env: Mapping[str, str]) -> str | None:
    """Why `command` cannot be found (as the shell would say it), or None when it can.

    Looked up before the sandbox starts: inside bubblewrap a failed exec ends bwrap the way a
    failed set-up does, and would be reported as exit 125 instead of the shell's 127."""
    name = command[0]
    if "/" in name:
        return None if (cwd / name).exists() else f"{name}: no such file or directory"
    if shutil.which(name, path=env.get("PATH", os.defpath)):
        return None
    return f"{name}: command not found"


def run_sandboxed(policy: SandboxPolicy, command: list[str], say: Say) -> int:
    """Run `command` in `policy.cwd`; returns its exit status (128 + n for signal n), 127 when
    it does not exist, 6 when the sandbox is unavailable, 125 when the sandbox could not be
    set up, 3 on bad config."""
    try:
        env = sandbox_command_env(policy)
    except OiexecError as exc:
        say(exc.render())
        return int(exc.exit_code)
    missing = missing_command(command, policy.cwd, env)
    if missing is not None:
        say(missing)
        return COMMAND_NOT_FOUND
    try:
        sandbox = get_sandbox(policy)
    except OiexecError as exc:
        say(exc.render())
        return int(exc.exit_code)
    try:
        return _run_in(sandbox, command, policy.cwd, env, say)
    finally:
        sandbox.close()  # the private /tmp lives for this one command


def _run_in(sandbox: Sandbox, command: list[str], cwd: Path, env: dict[str, str], say: Say) -> int:
    try:
        prepared = sandbox.prepare(command, cwd=cwd, env=env)
    except SandboxUnavailable as exc:
        say(exc.render())
        return int(exc.exit_code)
    try:
        proc = subprocess.Popen(
            prepared.argv,
            cwd=prepared.cwd,
            env=prepared.env,
            pass_fds=prepared.pass_fds,
            # Dies with this process, as exec's commands do (tools/process.py).
            preexec_fn=tied_to_runner(prepared.preexec_fn),
        )
        rc = proc.wait()
    except OSError as exc:
        prepared.after()
        say(f"could not start the command: {exc}")
        return COMMAND_NOT_FOUND
    notes = prepared.after()
    for note in notes:
        say(note)
    if prepared.setup_failure_exit_code is not None and rc == prepared.setup_failure_exit_code:
        say(f"sandbox setup failed ({sandbox.backend}); the command did not run")
    return 128 - rc if rc < 0 else rc
