"""The batch command line is the ceiling of every task's sandbox: a task file may tighten it,
never loosen it.

A task's `sandbox` and `profile` are passed to its `interpreter exec` after the command
line's options, so they would win over them. A tasks file is often written by someone other
than the operator (generated, committed to a repository, produced by an earlier run), so
what a task asks for is resolved here, exactly as its run would resolve it, and compared with
what the command line alone resolves to: a task that would let commands do more (a looser
mode, network, more writable roots, fewer read-only or denied paths, a degraded backend,
higher limits, a secret variable kept in the commands' environment) is a validation error
naming the task and the key, before anything runs.

Without `-s` on the command line the ceiling is what the config resolves to for a task:
`sandbox_mode` from the user config, a `--profile` or `-c`, else `read-only`, since a task's
worktree is a fresh directory that is never a trusted project.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from oiexec.config.loader import LoadedConfig, load_config
from oiexec.config.providers import resolve_provider
from oiexec.core.errors import OiexecError
from oiexec.core.policy import SandboxPolicy, loosenings
from oiexec.runner.batch.tasks import Task
from oiexec.runner.policy import run_policy
from oiexec.runner.request import ExecRequest
from oiexec.tools.shell_env import build_command_env

__all__ = ["Ceiling"]

#: What a run is resolved to here: the policy, and the secret values its commands would not
#: see (a profile may pass them through `shell_environment_policy`).
_Resolved = tuple[SandboxPolicy, frozenset[str]]


@dataclass
class Ceiling:
    """The command line's sandbox, and the check of each task against it."""

    #: The exec options of the command line, as a request (its prompt is not used).
    request: ExecRequest
    _cache: dict[tuple[str | None, str | None], _Resolved] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A command line the config cannot resolve is the operator's error, raised as is.
        #: The config the command line resolves to (what a task without keys of its own runs).
        self.config = load_config(self.request.config, warnings=[])
        self._top = self._resolve(self.request, self.config)

    @property
    def policy(self) -> SandboxPolicy:
        return self._top[0]

    def problems(self, task: Task) -> list[str]:
        """Why `task` may not run under this ceiling: one message per loosening key."""
        found: list[str] = []
        if task.sandbox is not None:
            found += self._check(f"`sandbox` {task.sandbox!r}", task.sandbox, None)
        if task.profile is not None:
            found += self._check(f"`profile` {task.profile!r}", None, task.profile)
        if task.sandbox is not None and task.profile is not None and not found:
            found += self._check("`sandbox` with `profile`", task.sandbox, task.profile)
        return found

    def _check(self, what: str, sandbox: str | None, profile: str | None) -> list[str]:
        try:
            policy, hidden = self._task(sandbox, profile)
        except OiexecError as exc:
            return [f"{what}: {exc.message}"]
        reasons = loosenings(self.policy, policy)
        kept = sorted(self._top[1] - hidden)
        if kept:
            reasons.append(f"{len(kept)} secret value(s) kept in the commands' environment")
        if not reasons:
            return []
        return [
            f"{what} loosens the batch's sandbox ({self.policy.summary()}, from its command "
            f"line and config): {'; '.join(reasons)}. A task may only tighten it; give the "
            "looser setting on the batch command line if every task may have it"
        ]

    def _task(self, sandbox: str | None, profile: str | None) -> _Resolved:
        cached = self._cache.get((sandbox, profile))
        if cached is not None:
            return cached
        inputs = self.request.config
        # As the task's own `-p`/`-s` come after the command line's: they replace them.
        flags = dict(inputs.flags)
        if sandbox is not None:
            flags["sandbox_mode"] = sandbox
        replaced = dataclasses.replace(inputs, profile=profile or inputs.profile, flags=flags)
        resolved = self._resolve(dataclasses.replace(self.request, config=replaced))
        self._cache[(sandbox, profile)] = resolved
        return resolved

    def _resolve(self, request: ExecRequest, config: LoadedConfig | None = None) -> _Resolved:
        if config is None:
            config = load_config(request.config, warnings=[])
        settings = config.settings
        # Untrusted, as every task's fresh worktree is.
        policy = run_policy(config, request, trusted=False)
        env = build_command_env(
            settings.shell_environment_policy,
            base_env=dict(os.environ),
            provider_env_key=_provider_key(config),
            sandbox_mode=policy.mode,
            network_disabled=policy.network_disabled,
        )
        return policy, frozenset(env.removed_secrets)


def _provider_key(config: LoadedConfig) -> str | None:
    """The variable holding the provider's key, which commands never get."""
    try:
        return resolve_provider(config.settings)[1].env_key
    except OiexecError:
        return None  # the task's run will say what is wrong with its provider
