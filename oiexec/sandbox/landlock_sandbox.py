"""The degraded Linux backend: Landlock + seccomp in the child, tripwire around each command.

Used when bwrap cannot create namespaces (Docker, AppArmor's userns restriction). Protected
names are not locked, only repaired after the fact (`tripwire.py`), and host processes stay
visible. A sentinel per command (`reaper.py`) kills what the command started when it ends or
the runner dies: with Landlock ABI >= 6 everything, whatever session it moved to; below, its
process group. A root runner with a pids cgroup per command and ABI >= 6 needs no sentinel:
the command's cgroup lists everything it started, and one watcher per run
(`reaper.RunWatcher`) empties the run's cgroups when the runner dies, so the child spawns no
sentinel (a spawn, and a wait for it, per command). Resource limits: `limits.py`.

`after()` of a command: reaper, then the command's cgroup (if any), then the tripwire, so the
repair runs once nothing of the command can write any more.
"""

from __future__ import annotations

import os
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
        roots = landlock_roots(policy)
        self._ruleset = Ruleset(roots, abi=abi, network_disabled=policy.network_disabled)
        program = seccomp.filter_for(policy, backend=self.backend)
        self._restrict = ChildRestrictor(self._ruleset, program)
        self._tripwire = Tripwire(policy)
        self._scoped = abi >= reaper.SCOPED_SIGNALS_ABI
        # The sentinel counts towards RLIMIT_NPROC but is spawned before the child joins the
        # command's cgroup. Without scoping a root runner's cgroup is the only full list; with
        # it, a root runner's cgroups let one watcher per run replace the sentinels.
        self._limiter = Limiter(
            policy.limits,
            nproc_overhead=1,
            cgroup_overhead=0,
            reap=not self._scoped or os.geteuid() == 0,
        )
        self._watcher = self._start_watcher(roots)

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def _start_watcher(self, roots: list[Path]) -> reaper.RunWatcher | None:
        """The run's watcher (see `reaper.RunWatcher`), where it can replace the sentinels."""
        where = self._limiter.run_cgroups()
        if not self._scoped or os.geteuid() != 0 or where is None:
            return None
        parent, prefix = where
        if any(parent.is_relative_to(root) for root in roots):
            return None  # commands could write the cgroup files: move out of theirs
        try:
            return reaper.RunWatcher(str(parent), prefix)
        except OSError:
            return None  # a sentinel per command, as without a cgroup

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        limits = self._limiter.prepare()
        # No sentinel where the run's watcher and the command's own cgroup do its work.
        alone = self._watcher is not None and limits.has_cgroup
        control = reaper.Control(sentinel=not alone, scoped=self._scoped)
        restrict = self._restrict.bind(
            sentinel=None if alone else control.start_sentinel,
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
                done += limits.release(kill=True, report=not alone)
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
        notes = self._watcher.finish() if self._watcher is not None else []
        # No model reads these any more: they go to the person running the run.
        for note in [*notes, *self._tripwire.restore()]:
            sys.stderr.write(f"oiexec: {note}\n")
