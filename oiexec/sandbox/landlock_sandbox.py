"""The degraded Linux backend: Landlock + seccomp in the child, tripwire around each command.

Used when bwrap cannot create namespaces (Docker, AppArmor's userns restriction). Protected
names are not locked, only repaired after the fact (`tripwire.py`), and host processes stay
visible. A sentinel per command (`reaper.py`) kills what the command started when it ends or
the runner dies: with Landlock ABI >= 6 everything, whatever session it moved to; below, its
process group. Resource limits: `limits.py`.

`after()` of a command: reaper, then the command's cgroup (if any), then the tripwire, so the
repair runs once nothing of the command can write any more.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.sandbox import profiles, reaper, seccomp
from oiexec.sandbox.bwrap import sandbox_env
from oiexec.sandbox.landlock import ChildRestrictor, Ruleset
from oiexec.sandbox.limits import Limiter
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
        self._scoped = abi >= reaper.SCOPED_SIGNALS_ABI
        # The sentinel counts towards RLIMIT_NPROC but is spawned before the child joins the
        # command's cgroup. Without scoping a root runner's cgroup is the only full list.
        self._limiter = Limiter(
            policy.limits, nproc_overhead=1, cgroup_overhead=0, reap=not self._scoped
        )

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        control = reaper.Control(sentinel=True, scoped=self._scoped)
        limits = self._limiter.prepare()
        restrict = self._restrict.bind(
            sentinel=control.start_sentinel,
            limits=limits.apply,
            started=control.report_started,
        )
        done: list[str] | None = None

        def after() -> list[str]:
            nonlocal done
            if done is None:
                if limits.is_empty():
                    control.dismiss()  # the command's cgroup says nothing is left
                    done = []
                else:
                    done = control.finish()
                done += limits.release(kill=True)
                done += self._tripwire.restore()
            return done

        return PreparedCommand(
            argv=list(argv),
            env=sandbox_env(self._policy, env),
            cwd=cwd,
            preexec_fn=restrict,
            after=after,
        )

    def describe(self) -> dict[str, Any]:
        return dict(self._report)

    def close(self) -> None:
        """End of run: a last repair, for what a command still running at the end wrote
        (this backend makes no mount points and keeps the host /tmp)."""
        self._limiter.close()
        # No model reads these any more: they go to the person running the run.
        for note in self._tripwire.restore():
            sys.stderr.write(f"oiexec: {note}\n")
