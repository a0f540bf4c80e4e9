"""Choose the sandbox backend for a policy. Fails closed: no backend, no command."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from oiexec.core import rundirs
from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import PreparedCommand, Sandbox, SandboxPolicy
from oiexec.sandbox import fault_switches
from oiexec.sandbox.nosandbox import NoSandbox

if TYPE_CHECKING:
    from oiexec.sandbox.diagnosis import Decision


class UnavailableSandbox:
    """Refuses every command, with the reason and fixes, so the model stops retrying."""

    backend = "unavailable"

    def __init__(self, decision: Decision) -> None:
        self._decision = decision
        self.reason = decision.reason

    @property
    def policy(self) -> SandboxPolicy:
        return self._decision.policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        mode = self._decision.policy.mode
        raise SandboxUnavailable(
            f"sandbox unavailable: `{mode}` cannot be enforced here ({self.reason}); "
            "the command was not run",
            hint="Fixes:\n" + "\n".join(f"- {fix}" for fix in self._decision.remediation),
        )

    def describe(self) -> dict[str, Any]:
        return self._decision.as_dict()

    def close(self) -> None:
        pass


def decide_for(policy: SandboxPolicy) -> Decision:
    """The backend decision for `policy`, from the cached preflight. Raises `ConfigError`
    when a test-only hook is set outside the test suite."""
    # Imported here: a run without a sandbox (danger-full-access) never probes the host.
    from oiexec.sandbox.diagnosis import decide
    from oiexec.sandbox.paths import real_writable_roots
    from oiexec.sandbox.preflight import run_preflight

    fault_switches.check()
    return decide(policy, run_preflight(real_writable_roots(policy)))


def get_sandbox(policy: SandboxPolicy) -> Sandbox:
    # Every run (and `interpreter sandbox`) starts here: the place to remove what runners
    # that were killed left in the temp dir.
    rundirs.sweep()
    if policy.mode == "danger-full-access":
        # No backend to choose: the host probes (a bwrap start, ~30 ms) would only be
        # reported, and a run without a sandbox reports none.
        fault_switches.check()
        return NoSandbox(policy)
    decision = decide_for(policy)
    report = decision.as_dict()
    if policy.network_allowlist and decision.backend != "none":
        from oiexec.sandbox.netgate import refuse_unisolated

        features = decision.preflight.bwrap
        netns = decision.backend == "bwrap" and features is not None and features.netns
        refuse_unisolated(policy, decision.backend, netns or decision.backend == "unavailable")
    if decision.backend == "none":
        return NoSandbox(policy)
    if decision.backend == "bwrap":
        from oiexec.sandbox.bwrap import BwrapSandbox

        assert decision.preflight.bwrap is not None
        return BwrapSandbox(
            policy,
            decision.preflight.bwrap,
            report,
            landlock_abi=decision.preflight.landlock_abi,
        )
    if decision.backend == "landlock":
        from oiexec.sandbox.landlock_sandbox import LandlockSandbox

        return LandlockSandbox(policy, decision.preflight.landlock_abi, report)
    if decision.backend == "seatbelt":
        from oiexec.sandbox.seatbelt import SeatbeltSandbox

        return SeatbeltSandbox(policy, report)
    return UnavailableSandbox(decision)
