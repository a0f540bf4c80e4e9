"""What the network allowlist refused in a run: a stderr line and a run-log line for each
denied request, as the command that made it ends, and one closing line with the count."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oiexec.output.runlog import RunLogSink
    from oiexec.sandbox.netgate import NetGate
    from oiexec.sandbox.netproxy import Denial


class NetworkReport:
    """Listens to the sandbox's allowlist proxy (nothing to do without one)."""

    def __init__(
        self,
        gate: NetGate | None,
        warn: Callable[[str], None],
        runlog: RunLogSink | None,
    ) -> None:
        self._gate = gate
        self._warn = warn
        self._runlog = runlog
        self.targets: list[str] = []
        if gate is not None:
            gate.listener = self._denied

    def _denied(self, denial: Denial) -> None:
        target = denial.target()
        if target not in self.targets:
            self.targets.append(target)
        self._warn(f"network: denied {denial.method} {target} (not in allowed_domains)")
        if self._runlog is not None:
            self._runlog.note(
                "sandbox.network_denied", method=denial.method, host=denial.host, port=denial.port
            )

    def finish(self) -> int:
        """The closing line, when anything was denied; the number of denied requests."""
        if self._gate is None:
            return 0
        self._gate.flush()  # what a command still running was refused
        count = self._gate.denied
        if count:
            shown = ", ".join(self.targets[:5]) + (", ..." if len(self.targets) > 5 else "")
            self._warn(f"network allowlist: {count} request(s) denied ({shown})")
            if self._runlog is not None:
                self._runlog.note("sandbox.network_denied_total", count=count)
        return count
