"""New, resumed or forked threads: which session a run continues, what it restores from it,
which rollout to write, what history to start from, and the sink that mirrors the run's
events into it.

A resumed or forked run is made as the session's run was (model, provider, harness, sandbox,
writable roots, directory, effort, output schema); what is given now on the command line
overrides, and each override is announced and recorded in the new `turn_context`.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config.loader import LoadedConfig
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError, ExitCode, OiexecError, SessionError, UsageError
from oiexec.core.events import ThreadEvent, Usage
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import SessionStore
from oiexec.core.types import HistoryItem
from oiexec.core.version import __version__
from oiexec.runner.request import ExecRequest
from oiexec.session.index import LoadedSession
from oiexec.session.settings import RunSettings


@dataclass
class OpenedSession:
    store: SessionStore
    history: list[HistoryItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    #: The session this run continues (resume or fork), None for a new thread.
    continued: LoadedSession | None = None

    @property
    def cost_usd(self) -> float | None:
        """What the session cost before this run (None: unknown)."""
        return 0.0 if self.continued is None else self.continued.cost_usd


# --- which session ------------------------------------------------------------------------


def locate_session(request: ExecRequest, home: Path) -> LoadedSession | None:
    """The session a resume or fork continues; None for a new thread (`--last --or-new` with
    nothing to continue). An unknown id exits 1, as in Codex; `--last` with no session of
    this directory exits 2, since a retry that silently starts over is not a retry.

    `--last` takes the newest session of the directory whatever its provider (Codex looks
    only at the configured provider's, so a session whose provider came from `-c` on its
    first run is never found): the session's provider and model come back with it, and a
    provider given now is a change, announced like any other."""
    from oiexec.session.index import find_last, find_rollout, load_rollout

    if request.fork_from:
        path = find_rollout(home, request.fork_from)
        if path is None:
            raise SessionError(f"no rollout found for thread id {request.fork_from}")
        return load_rollout(path)
    target = request.resume
    if target is None:
        return None
    if target.session_id:
        path = find_rollout(home, target.session_id)
        if path is None:
            raise SessionError(f"no rollout found for thread id {target.session_id}")
        return load_rollout(path)
    path = find_last(home, cwd=request.cwd, all_cwds=target.all_cwds)
    if path is not None:
        return load_rollout(path)
    where = "" if target.all_cwds else f" in {request.cwd}"
    if target.or_new:
        sys.stderr.write(f"resume: no session{where}; starting a new one (--or-new)\n")
        return None
    raise UsageError(
        f"no session to resume{where}",
        hint="List them with `interpreter sessions list --all`, resume one by id, widen the "
        "search with --all, or pass --or-new to start a new session when there is none.",
    )


def resolve_run_config(
    request: ExecRequest, warnings: list[str]
) -> tuple[ExecRequest, LoadedConfig, LoadedSession | None]:
    """The request and config a run executes with, and the session it continues (resume or
    fork), if any: config is loaded once, with the session's settings as its layer between
    the environment and the command line. Warnings go to `warnings` as they are found.

    The session is found in the home the environment names (where config is read from too),
    before config is read; a session that cannot be found is reported after any error in
    the config, as the first thing wrong with the command line.
    """
    from oiexec.config.environment import default_home
    from oiexec.config.loader import load_config

    continued: LoadedSession | None = None
    missing: OiexecError | None = None
    if request.resume or request.fork_from:
        try:
            continued = locate_session(request, default_home())
        except OiexecError as exc:
            missing = exc
    if continued is not None:
        request = restored_request(request, continued)
    config = load_config(request.config, warnings=warnings)
    if missing is not None:
        raise missing
    if continued is not None:
        _check_session_provider(config, request)
    return request, config, continued


def _check_session_provider(config: LoadedConfig, request: ExecRequest) -> None:
    """A provider the continued session restores and that is not configured now (its first
    run defined it with `-c` flags) stops the run here, saying which session wants it and
    the two ways on; any other provider error is raised as it is."""
    from oiexec.config.providers import resolve_provider

    try:
        resolve_provider(config.settings)
    except ConfigError as exc:
        if config.origins.get("model_provider") != request.config.session_origin:
            raise
        wanted = config.settings.model_provider
        raise ConfigError(
            f"the {request.config.session_origin} was made with model provider `{wanted}`, "
            f"which is not configured now ({exc.message})",
            hint=f"Define [model_providers.{wanted}] in config (or pass the -c flags its first "
            "run had), or continue it with another provider: -c model_provider=ID.",
        ) from exc


# --- what it restores ---------------------------------------------------------------------


def restored_request(request: ExecRequest, loaded: LoadedSession) -> ExecRequest:
    """`request` continued from `loaded`: its settings as a config layer under the command
    line, its directory unless `-C` was given, its output schema unless one is given now."""
    settings = loaded.settings
    cwd = request.cwd
    if not request.cwd_explicit and settings.cwd and Path(settings.cwd).is_dir():
        cwd = Path(settings.cwd)
    schema = request.output_schema
    if request.output_schema_file is None and schema is None:
        schema = settings.output_schema
    config = dataclasses.replace(
        request.config,
        cwd=cwd,
        session=settings.config_keys(),
        session_origin=f"session {loaded.thread_id}",
        session_made_with=(settings.model, settings.model_provider),
    )
    return dataclasses.replace(request, cwd=cwd, output_schema=schema, config=config)


@dataclass(frozen=True)
class SettingChange:
    """A setting that differs from the session's run, and what changed it."""

    name: str
    before: str
    after: str
    source: str
    #: The sandbox was narrowed or widened (announced as an `error` item in JSON mode too).
    sandbox: bool = False

    def line(self, verb: str) -> str:
        return f"{verb}: {self.name} {self.before} -> {self.after} (from {self.source})"

    def wire_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FLAG_NAMES = {
    "model": "-m",
    "sandbox_mode": "-s",
    "model_provider": "--oss/--local-provider",
}


def setting_changes(
    recorded: RunSettings,
    *,
    request: ExecRequest,
    config: LoadedConfig,
    provider_id: str,
    policy: SandboxPolicy,
    output_schema: dict[str, Any] | None,
    forced_mode: bool = False,
) -> list[SettingChange]:
    """What this run does differently from the session's, each with its source."""
    settings = config.settings

    def source(key: str) -> str:
        origin = config.origins.get(key, "built-in default")
        if origin == "command-line flag":
            return _FLAG_NAMES.get(key, origin)
        if origin == "-c override":
            return f"-c {key}"
        return origin

    changes: list[SettingChange] = []

    def compare(name: str, before: Any, after: Any, src: str, sandbox: bool = False) -> None:
        if before is not None and before != after:
            changes.append(SettingChange(name, _show(before), _show(after), src, sandbox))

    compare("model", recorded.model, settings.model, source("model"))
    compare("provider", recorded.model_provider, provider_id, source("model_provider"))
    compare("reasoning effort", recorded.effort, settings.model_reasoning_effort,
            source("model_reasoning_effort"))  # fmt: skip
    if request.dangerously_bypass:
        mode_source = "--dangerously-bypass-approvals-and-sandbox"
    elif forced_mode:
        mode_source = "this command"
    else:
        mode_source = source("sandbox_mode")
    compare("sandbox", recorded.sandbox_mode, policy.mode, mode_source, sandbox=True)
    if recorded.writable_roots is not None:
        now = extra_roots(policy)
        roots_source = (
            "--add-dir" if request.add_dirs else source("sandbox_workspace_write.writable_roots")
        )
        if set(recorded.writable_roots) != set(now):
            changes.append(
                SettingChange("writable roots", _show(list(recorded.writable_roots)),
                              _show(list(now)), roots_source, sandbox=True)
            )  # fmt: skip
    compare("network access", recorded.network_access, policy.network_access,
            source("sandbox_workspace_write.network_access"), sandbox=True)  # fmt: skip
    cwd_source = "-C" if request.cwd_explicit else "the session's directory no longer exists"
    compare("working directory", recorded.cwd, str(request.cwd), cwd_source)
    if recorded.output_schema is not None and output_schema != recorded.output_schema:
        changes.append(SettingChange("output schema", "the session's", "a new one",
                                     "--output-schema"))  # fmt: skip
    return changes


def _show(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "enabled" if value else "restricted"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def killed_note(continued: LoadedSession, verb: str) -> str | None:
    """Said when the session's last run never recorded an outcome: its open tool calls were
    closed when the history was read (session/repair.py), not run again."""
    if not continued.runs or continued.outcome.status != "incomplete":
        return None
    closed = continued.closed_calls
    tail = f"; {closed} unfinished tool call(s) closed as aborted" if closed else ""
    return f"{verb}: the session's last run was killed before it finished{tail}"


def environment_differs(recorded: RunSettings, cwd: Path, policy: SandboxPolicy) -> bool:
    """Whether the environment the history last described is not what is enforced now."""
    if recorded.cwd is not None and recorded.cwd != str(cwd):
        return True
    if recorded.sandbox_mode is not None and recorded.sandbox_mode != policy.mode:
        return True
    if recorded.network_access is not None and recorded.network_access != policy.network_access:
        return True
    roots = recorded.writable_roots
    return roots is not None and set(roots) != set(extra_roots(policy))


def extra_roots(policy: SandboxPolicy) -> list[str]:
    """The extra writable roots as recorded: each once (the session's roots come back as
    config, so an `--add-dir` repeated on resume would otherwise count twice), in order."""
    return list(dict.fromkeys(str(root) for root in policy.extra_roots))


def outcome_status(code: ExitCode) -> str:
    """The `status` a run's `task_complete` record gets (what `sessions list` shows)."""
    if code == ExitCode.SUCCESS:
        return "completed"
    return "interrupted" if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED) else "failed"


# --- the rollout --------------------------------------------------------------------------


def open_session(
    request: ExecRequest, config: LoadedConfig, provider_id: str, continued: LoadedSession | None
) -> OpenedSession:
    """The store this run writes to and the history it starts from."""
    from oiexec.session.store import NullStore, RolloutStore, fork_rollout

    home = config.home
    if continued is not None and request.fork_from:
        store = fork_rollout(
            home,
            continued.path,
            cwd=request.cwd,
            model_provider=provider_id,
            cli_version=__version__,
            base_instructions=None,
        )
        return OpenedSession(store, list(continued.history), continued.usage, continued)
    if continued is not None:
        resumed: SessionStore = (
            NullStore(continued.thread_id)
            if request.ephemeral
            else RolloutStore.open_existing(continued.path)
        )
        return OpenedSession(resumed, list(continued.history), continued.usage, continued)
    if request.ephemeral:
        return OpenedSession(NullStore())
    return OpenedSession(
        RolloutStore.create(
            home,
            cwd=request.cwd,
            model_provider=provider_id,
            cli_version=__version__,
            base_instructions=None,
        )
    )


class SessionSink:
    """Mirrors public events into the rollout, so a killed run still shows what happened."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def emit(self, event: ThreadEvent) -> None:
        self._store.append("event_msg", {"type": "thread_event", "event": event.model_dump()})

    def close(self) -> None:
        pass


def turn_context(
    cwd: Path,
    policy: SandboxPolicy,
    settings: Settings,
    *,
    provider_id: str,
    harness_id: str,
    output_schema: dict[str, Any] | None,
    changes: list[SettingChange],
) -> dict[str, Any]:
    """The `turn_context` record a run writes: Codex's fields, plus what a resume restores."""
    return {
        "cwd": str(cwd),
        "approval_policy": "never",
        "sandbox_policy": {
            "type": policy.mode,
            "network_access": not policy.network_disabled,
            "exclude_tmpdir_env_var": policy.exclude_tmpdir_env_var,
            "exclude_slash_tmp": policy.exclude_slash_tmp,
        },
        "model": settings.model,
        "model_provider": provider_id,
        "effort": settings.model_reasoning_effort,
        # What a resume restores (the configured network access, not the effective one).
        "harness": harness_id,
        "writable_roots": extra_roots(policy),
        "network_access": policy.network_access,
        "output_schema": output_schema,
        "overrides": [change.wire_dict() for change in changes],
    }
