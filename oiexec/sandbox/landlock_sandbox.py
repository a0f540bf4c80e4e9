"""The degraded Linux backend: Landlock + seccomp in the child, tripwire around each command.

Used when bwrap cannot create namespaces (Docker, AppArmor's userns restriction). Protected
names are not locked, only repaired after the fact, and host processes stay visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oiexec.sandbox import profiles, seccomp
from oiexec.sandbox.base import PreparedCommand, SandboxPolicy
from oiexec.sandbox.bwrap import sandbox_env
from oiexec.sandbox.landlock import ChildRestrictor, Ruleset
from oiexec.sandbox.paths import real_writable_roots
from oiexec.sandbox.tripwire import Tripwire


def landlock_roots(policy: SandboxPolicy) -> list[Path]:
    roots = real_writable_roots(policy)
    if policy.mode == "workspace-write":
        for extra in profiles.policy_data().get("linux_extra_writable_roots", []):
            path = Path(extra)
            if path.is_dir() and path not in roots:
                roots.append(path)
    return roots


class LandlockSandbox:
    backend = "landlock"

    def __init__(self, policy: SandboxPolicy, abi: int, report: dict[str, Any]) -> None:
        self._policy = policy
        self._report = report
        self._ruleset = Ruleset(
            landlock_roots(policy), abi=abi, network_disabled=policy.network_disabled
        )
        program = seccomp.filter_for(policy, backend=self.backend)
        self._restrict = ChildRestrictor(self._ruleset, program)
        self._tripwire = Tripwire(policy)

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        ids = self._tripwire.identities()
        before = self._tripwire.snapshot()
        return PreparedCommand(
            argv=list(argv),
            env=sandbox_env(self._policy, env),
            cwd=cwd,
            preexec_fn=self._restrict,
            after=lambda: self._tripwire.restore(before, ids),
        )

    def describe(self) -> dict[str, Any]:
        return dict(self._report)

    def close(self) -> None:
        """Nothing to remove: this backend makes no mount points and keeps the host /tmp."""
