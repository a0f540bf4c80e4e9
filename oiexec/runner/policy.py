"""From settings and flags to a sandbox policy and the commands' environment; and noticing
when the sandbox refused."""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oiexec.config.loader import LoadedConfig
from oiexec.config.permissions import apply_profile
from oiexec.config.settings import Settings
from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import (
    PreparedCommand,
    Sandbox,
    SandboxLimits,
    SandboxMode,
    SandboxPolicy,
    resolve_require,
)
from oiexec.core.redact import register_secret
from oiexec.runner.request import ExecRequest
from oiexec.tools.shell_env import CommandEnv, HiddenInstall, build_command_env

if TYPE_CHECKING:
    from oiexec.sandbox.netgate import NetGate


def effective_mode(settings: Settings, *, trusted: bool, bypass: bool) -> SandboxMode:
    if bypass:
        return "danger-full-access"
    if settings.sandbox_mode:
        return settings.sandbox_mode
    # Codex's default: an untrusted project gets read-only, a trusted one workspace-write.
    return "workspace-write" if trusted else "read-only"


def build_policy(settings: Settings, request: ExecRequest, *, trusted: bool) -> SandboxPolicy:
    extra = settings.sandbox_workspace_write
    limits = settings.sandbox_limits
    roots = [*request.add_dirs, *(Path(p).expanduser() for p in extra.writable_roots)]
    return SandboxPolicy(
        mode=effective_mode(settings, trusted=trusted, bypass=request.dangerously_bypass),
        cwd=request.cwd,
        extra_roots=tuple(r if r.is_absolute() else request.cwd / r for r in roots),
        network_access=extra.network_access,
        allowed_domains=tuple(extra.allowed_domains),
        exclude_tmpdir_env_var=extra.exclude_tmpdir_env_var,
        exclude_slash_tmp=extra.exclude_slash_tmp,
        require=resolve_require(settings.sandbox_require),
        backend=settings.sandbox_backend,
        limits=SandboxLimits.from_config(
            limits.max_processes, limits.max_file_size_mb, limits.max_cpu_seconds
        ),
    )


def run_policy(config: LoadedConfig, request: ExecRequest, *, trusted: bool) -> SandboxPolicy:
    """The sandbox policy a run gets: settings and flags, then the permission profile. The one
    place it is worked out, for a run and for the batch's check of a task against its command
    line (runner/batch/ceiling.py), so the two can never disagree."""
    policy = build_policy(config.settings, request, trusted=trusted)
    return apply_profile(
        policy,
        config.settings.default_permissions,
        config.settings.permissions,
        sandbox_mode_origin=_sandbox_mode_origin(config, request),
        bypass=request.dangerously_bypass,
        environ=os.environ,
        add_dirs=request.add_dirs,
    )


def _sandbox_mode_origin(config: LoadedConfig, request: ExecRequest) -> str | None:
    """Where `sandbox_mode` was set for this run, if anywhere but the session a resume
    continues (which records the mode a profile gave it)."""
    origin = config.origins.get("sandbox_mode")
    if config.settings.sandbox_mode is None or origin is None:
        return None
    return None if origin == request.config.session_origin else origin


def add_dir_warnings(policy: SandboxPolicy, add_dirs: tuple[Path, ...]) -> list[str]:
    """`--add-dir` only widens `workspace-write`; with a read-only sandbox the directories stay
    read-only, which the user should hear before the model tries to write there."""
    if not add_dirs or policy.mode != "read-only":
        return []
    names = ", ".join(str(path) for path in add_dirs)
    return [
        f"--add-dir {names}: not writable, the sandbox is read-only "
        "(extra writable directories apply to workspace-write only)"
    ]


def command_env(
    settings: Settings,
    policy: SandboxPolicy,
    *,
    provider_env_key: str | None,
    extra: Mapping[str, str] | None = None,
) -> CommandEnv:
    """The environment model-run commands get, built from this process's; the secrets kept
    from them are registered, so they are masked wherever they would still show up."""
    env = build_command_env(
        settings.shell_environment_policy,
        base_env=dict(os.environ),
        provider_env_key=provider_env_key,
        sandbox_mode=policy.mode,
        network_disabled=policy.network_disabled,
        extra=extra,
        hidden=runner_install(policy.cwd),
    )
    for secret in env.removed_secrets:
        register_secret(secret)
    return env


def runner_install(workspace: Path) -> HiddenInstall | None:
    """The runner's own virtualenv, which commands must not see: with it first on PATH (an
    activated venv, or `.venv/bin/interpreter` run by path) a command's `python3` would be the
    runner's, without the project's packages. None when the runner is not in a virtualenv
    (a system or `--user` install shares its bin directory with other tools), and when the
    virtualenv lies inside the workspace: then it is the project's own, and its tools are
    the project's."""
    if sys.prefix == sys.base_prefix:
        return None
    prefix = os.path.realpath(sys.prefix)
    root = os.path.realpath(workspace)
    if prefix == root or prefix.startswith(root.rstrip(os.sep) + os.sep):
        return None
    # The scripts directory holds the `interpreter` entry point and the venv's `python3`.
    dirs = {sysconfig.get_path("scripts"), os.path.dirname(sys.executable)}
    inside = [d for d in dirs if d and os.path.realpath(d).startswith(prefix + os.sep)]
    return HiddenInstall(prefix=sys.prefix, bin_dirs=tuple(sorted(inside)))


class RefusalTracker:
    """Wraps a sandbox and remembers each refusal, so the run can end with the sandbox exit
    code instead of pretending the task was done."""

    def __init__(self, inner: Sandbox) -> None:
        self._inner = inner
        self.refusals: list[str] = []

    @property
    def backend(self) -> str:
        return self._inner.backend

    @property
    def policy(self) -> SandboxPolicy:
        return self._inner.policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        try:
            return self._inner.prepare(argv, cwd=cwd, env=env)
        except SandboxUnavailable as exc:
            self.refusals.append(exc.message.removeprefix("sandbox unavailable: "))
            raise

    def describe(self) -> dict[str, Any]:
        return self._inner.describe()

    @property
    def network_gate(self) -> NetGate | None:
        """The network allowlist's proxy, when the backend runs one (bwrap)."""
        gate: NetGate | None = getattr(self._inner, "net", None)
        return gate

    def close(self) -> None:
        self._inner.close()
