"""Choose the sandbox backend for a policy. Fails closed: no backend, no command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oiexec.errors import SandboxUnavailable
from oiexec.protocols import Sandbox
from oiexec.sandbox.base import NoSandbox, PreparedCommand, SandboxPolicy

_HOW_TO_PROCEED = (
    "No OS sandbox backend is available yet, so `{mode}` cannot be enforced and the command "
    "was not run. Run with `--sandbox danger-full-access` only inside an environment that is "
    "already isolated (a disposable container or VM)."
)


class UnavailableSandbox:
    """Refuses every command, with the reason, so the model stops retrying."""

    backend = "unavailable"

    def __init__(self, policy: SandboxPolicy, reason: str) -> None:
        self._policy = policy
        self.reason = reason

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        raise SandboxUnavailable(f"sandbox unavailable: {self.reason}")

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "none",
            "mode": self._policy.mode,
            "degraded": ["no backend"],
            "remediation": [self.reason],
        }


def get_sandbox(policy: SandboxPolicy) -> Sandbox:
    if policy.mode == "danger-full-access":
        return NoSandbox(policy)
    return UnavailableSandbox(policy, _HOW_TO_PROCEED.format(mode=policy.mode))
