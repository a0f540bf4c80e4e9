"""`interpreter sandbox doctor`: probe by running, then explain."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import Sandbox, SandboxPolicy
from oiexec.sandbox.select import decide_for, get_sandbox


def _self_test(policy: SandboxPolicy) -> str | None:
    """Run /bin/true through the chosen backend; None when it ran and exited 0."""
    sandbox = get_sandbox(policy)
    try:
        return _run_true(sandbox, policy)
    finally:
        sandbox.close()


def _run_true(sandbox: Sandbox, policy: SandboxPolicy) -> str | None:
    try:
        prepared = sandbox.prepare(["/bin/true"], cwd=policy.cwd, env=dict(os.environ))
    except SandboxUnavailable as exc:
        return exc.message
    try:
        proc = subprocess.run(
            prepared.argv,
            cwd=prepared.cwd,
            env=prepared.env,
            pass_fds=prepared.pass_fds,
            preexec_fn=prepared.preexec_fn,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not start the sandboxed self-test: {exc}"
    finally:
        prepared.after()
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        return f"self-test exited {proc.returncode}: {err}"
    return None


def run_doctor(policy: SandboxPolicy) -> dict[str, Any]:
    decision = decide_for(policy)
    report = decision.as_dict()
    failure = _self_test(policy) if decision.usable else decision.reason
    report["self_test"] = "ok" if failure is None else failure
    report["ok"] = failure is None
    return report


def render_report(report: dict[str, Any]) -> str:
    pre = report["preflight"]
    lines = [
        f"mode:     {report['mode']} (network {report['network']}, require {report['require']})",
        f"backend:  {report['backend']}",
        f"why:      {report['reason']}",
        f"platform: {pre['platform']} {pre['arch'] or ''}".rstrip(),
    ]
    if pre["platform"] == "linux":
        lines.append(
            f"bwrap:    {pre['bwrap_path'] or 'not found'}"
            + ("" if pre["bwrap_works"] else f" (fails: {pre['bwrap_error']})")
        )
        lines.append(
            f"landlock: ABI {pre['landlock_abi']}"
            + (f" ({pre['landlock_error']})" if pre["landlock_error"] else "")
        )
    enforced = report["enforced"]
    lines.append("enforced: " + (", ".join(k for k, v in enforced.items() if v) or "nothing"))
    unenforced = [k for k, v in enforced.items() if not v]
    if unenforced:
        lines.append("not enforced: " + ", ".join(unenforced))
    lines += [f"missing:  {item}" for item in report.get("guarantees_missing", [])]
    lines += [f"degraded: {item}" for item in report["degraded"]]
    lines += [f"fix:      {item}" for item in report["remediation"]]
    lines.append(f"self-test: {report['self_test']}")
    lines.append(
        "result:   "
        + (
            "OK, the mode can be enforced"
            if report["ok"]
            else "FAIL, this mode cannot be enforced here"
        )
    )
    return "\n".join(lines)
