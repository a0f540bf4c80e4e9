"""What a run was made with and how it ended, as its rollout recorded them.

A run writes a `turn_context` record when it starts (the settings) and a `task_complete`
record when it ends (the outcome). Rollouts written before these fields existed lack some of
them: every field is optional, and a missing one is simply not restored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Outcome", "RunSettings", "is_run_start", "outcome_of", "settings_of"]

OutcomeStatus = Literal["completed", "failed", "interrupted", "incomplete"]


def is_run_start(record_type: str, payload: dict[str, Any]) -> bool:
    """A run's mirrored `thread.started` event: its first record, before its `turn_context`
    (so its startup warnings and a failure before the context belong to it)."""
    if record_type != "event_msg" or payload.get("type") != "thread_event":
        return False
    event = payload.get("event")
    return isinstance(event, dict) and event.get("type") == "thread.started"


@dataclass(frozen=True)
class RunSettings:
    """The settings of one run, from its `turn_context` record."""

    cwd: str | None = None
    model: str | None = None
    model_provider: str | None = None
    harness: str | None = None
    sandbox_mode: str | None = None
    network_access: bool | None = None
    #: Extra writable roots (`--add-dir` and `sandbox_workspace_write.writable_roots`);
    #: None when the rollout predates recording them.
    writable_roots: tuple[str, ...] | None = None
    effort: str | None = None
    output_schema: dict[str, Any] | None = None

    def config_keys(self) -> dict[str, Any]:
        """What a resume or fork restores, as dotted config keys: the layer the continued
        run's config gets between the environment and the command line."""
        keys: dict[str, Any] = {
            "model": self.model,
            "model_provider": self.model_provider,
            "harness": self.harness,
            "sandbox_mode": self.sandbox_mode,
            "model_reasoning_effort": self.effort,
        }
        # An empty string was never a setting (a rollout written by hand or damaged).
        restored = {key: value for key, value in keys.items() if value}
        if self.writable_roots is not None:
            restored["sandbox_workspace_write.writable_roots"] = list(self.writable_roots)
        if self.network_access is not None:
            restored["sandbox_workspace_write.network_access"] = self.network_access
        return restored

    def wire_dict(self) -> dict[str, Any]:
        """The documented `sessions show --json` shape."""
        return {
            "cwd": self.cwd,
            "model": self.model,
            "model_provider": self.model_provider,
            "harness": self.harness,
            "sandbox_mode": self.sandbox_mode,
            "network_access": self.network_access,
            "writable_roots": list(self.writable_roots)
            if self.writable_roots is not None
            else None,
            "reasoning_effort": self.effort,
            "output_schema": self.output_schema,
        }


def settings_of(payload: dict[str, Any]) -> RunSettings:
    """Reads a `turn_context` payload; fields of the wrong type count as missing."""
    policy = payload.get("sandbox_policy")
    policy = policy if isinstance(policy, dict) else {}
    roots = payload.get("writable_roots")
    schema = payload.get("output_schema")
    # The configured value (top level) is what a resume restores; the effective one in
    # `sandbox_policy` is false in read-only whatever was configured.
    network = payload.get("network_access")
    return RunSettings(
        cwd=_str(payload.get("cwd")),
        model=_str(payload.get("model")),
        model_provider=_str(payload.get("model_provider")),
        harness=_str(payload.get("harness")),
        sandbox_mode=_str(policy.get("type")),
        network_access=network if isinstance(network, bool) else None,
        writable_roots=tuple(r for r in roots if isinstance(r, str))
        if isinstance(roots, list)
        else None,
        effort=_str(payload.get("effort")),
        output_schema=schema if isinstance(schema, dict) else None,
    )


@dataclass(frozen=True)
class Outcome:
    """How the last run of a thread ended. `incomplete`: it was killed before it could say."""

    status: OutcomeStatus
    exit_code: int | None = None
    failure: str | None = None
    last_message: str | None = None

    def wire_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "failure": self.failure,
            "last_message": self.last_message,
        }


INCOMPLETE = Outcome("incomplete")


def outcome_of(payload: dict[str, Any]) -> Outcome:
    """Reads a `task_complete` payload. One written before outcomes were recorded has no
    `status`: it finished, but whether it succeeded is unknown."""
    status = payload.get("status")
    code = payload.get("exit_code")
    known: tuple[OutcomeStatus, ...] = ("completed", "failed", "interrupted")
    return Outcome(
        status=status if status in known else "completed",
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        failure=_str(payload.get("failure")),
        last_message=_str(payload.get("last_agent_message")),
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
