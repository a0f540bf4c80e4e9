"""`danger-full-access`: no sandbox at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oiexec.core.policy import PreparedCommand, SandboxPolicy


class NoSandbox:
    """`danger-full-access`: the command runs as the runner does."""

    backend = "none"

    def __init__(self, policy: SandboxPolicy) -> None:
        self._policy = policy

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        return PreparedCommand(argv=argv, env=env, cwd=cwd)

    def describe(self) -> dict[str, Any]:
        return {"backend": "none", "mode": self._policy.mode, "degraded": [], "remediation": []}

    def close(self) -> None:
        pass
