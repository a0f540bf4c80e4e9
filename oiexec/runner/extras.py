"""Skills, hooks and `notify` for one run: what the runner hands the harness and the loop.

`open_extras` finds the skills (unless `features.skills = false`) and the hooks (unless
`features.hooks = false`), project ones only in a trusted project. The runner then asks the
`Extras` for the context SessionStart and UserPromptSubmit hooks add, wraps the final-answer
policy in the Stop hooks, hands `gate` to the loop, and calls `notify` after a completed turn.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from oiexec.agent.final import FinalAnswerPolicy, Retry
from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.errors import ConfigError, FailureClass, OiexecError
from oiexec.core.protocols import Tool, ToolGate
from oiexec.core.types import Message
from oiexec.extensions.skills import Skill

if TYPE_CHECKING:
    from oiexec.config.hook_table import HooksConfig
    from oiexec.config.loader import LoadedConfig
    from oiexec.extensions.hook_events import HookSession
    from oiexec.output.runlog import RunLogSink
    from oiexec.runner.prepare import Prepared

__all__ = [
    "MAX_STOP_CONTINUATIONS",
    "Extras",
    "PromptBlocked",
    "check_hook_files",
    "hook_sources",
    "open_extras",
]

#: How many times Stop hooks may send the model back before its answer stands.
MAX_STOP_CONTINUATIONS = 3


class PromptBlocked(OiexecError):
    """A UserPromptSubmit hook refused the prompt (exit 1, the turn fails with its reason)."""

    # The configured hooks decided; rerunning changes nothing.
    failure_class: ClassVar[FailureClass] = "config"


@dataclass
class Extras:
    skills: tuple[Skill, ...] = ()
    #: The pre/post tool hooks around every call, None without any.
    gate: ToolGate | None = None
    hooks: HookSession | None = None
    notify: tuple[str, ...] = ()
    #: Credential variables config passes to `notify` (`notify_env_vars`).
    notify_env: tuple[str, ...] = ()
    runlog: RunLogSink | None = field(default=None, repr=False)

    def know_tools(self, tools: Sequence[Tool]) -> None:
        """The harness's tools, so hooks see shell tools as `Bash` as Codex reports them."""
        if self.hooks is not None:
            self.hooks.know_tools(tools)

    def opening_context(self, prompt: str, *, resumed: bool) -> list[Message]:
        """What SessionStart and UserPromptSubmit hooks add before the prompt; raises
        `PromptBlocked` when a UserPromptSubmit hook refuses the prompt."""
        if self.hooks is None:
            return []
        contexts = self.hooks.session_start("resume" if resumed else "startup")
        blocked, more = self.hooks.user_prompt_submit(prompt)
        if blocked is not None:
            raise PromptBlocked(f"the prompt was blocked by a UserPromptSubmit hook: {blocked}")
        return [Message(role="developer", text=text) for text in (*contexts, *more)]

    def final_policy(self, inner: FinalAnswerPolicy) -> FinalAnswerPolicy:
        if self.hooks is None or not self.hooks.runner.has("Stop"):
            return inner
        return _StopHookAnswer(inner, self.hooks)

    def run_notify(
        self,
        *,
        thread_id: str,
        cwd: Path,
        prompt: str,
        final_message: str | None,
        warn: Callable[[str], None],
    ) -> None:
        if not self.notify:
            return
        from oiexec.extensions.notify import notify_payload, run_notify

        payload = notify_payload(
            thread_id=thread_id,
            turn_id=self.hooks.turn_id if self.hooks is not None else _new_turn_id(),
            cwd=cwd,
            input_messages=[prompt],
            last_assistant_message=final_message,
        )
        runlog = self.runlog
        run_notify(
            self.notify,
            payload,
            cwd=cwd,
            env=os.environ,
            warn=warn,
            note=(runlog.note if runlog is not None else _no_note),
            passed_env=self.notify_env,
        )


def open_extras(
    prepared: Prepared,
    ctx: ToolContext,
    stack: contextlib.ExitStack,
    runlog: RunLogSink | None,
    *,
    thread_id: str = "",
    transcript_path: Path | None = None,
) -> Extras:
    settings, config = prepared.config.settings, prepared.config
    skills: tuple[Skill, ...] = ()
    if settings.features.get("skills", True) is not False:
        from oiexec.extensions.skills import discover_skills, skill_roots

        roots = skill_roots(
            prepared.request.cwd,
            config.project_root,
            trusted=config.trusted,
            home=config.home,
            user_home=Path.home(),
        )
        skills = discover_skills(roots, ctx.warn)
        if skills and runlog is not None:
            runlog.note("skills.found", skills=[str(s.path) for s in skills])
    extras = Extras(
        skills=skills,
        notify=tuple(settings.notify or ()),
        notify_env=tuple(settings.notify_env_vars),
        runlog=runlog,
    )
    session = _open_hooks(prepared, ctx, runlog, thread_id, transcript_path)
    if session is not None:
        from oiexec.extensions.hook_events import HookGate

        extras.hooks = session
        if session.runner.has("PreToolUse") or session.runner.has("PostToolUse"):
            extras.gate = HookGate(session)
    return extras


def check_hook_files(prepared: Prepared) -> None:
    """Raises `ConfigError` for a hooks.json that does not load (unless hooks are off), and
    for a hook or notify program that lies where sandboxed commands can write (they run
    outside the sandbox, oiexec.extensions.outside)."""
    from oiexec.extensions.hooks import collect_handlers, hooks_enabled, refuse_untrusted
    from oiexec.extensions.notify import notify_refusal

    settings, cwd = prepared.config.settings, prepared.request.cwd
    path_value = os.environ.get("PATH", os.defpath)
    if hooks_enabled(settings.features):
        handlers = collect_handlers(hook_sources(prepared.config), lambda _text: None)
        refuse_untrusted(handlers, cwd, path_value)
    refusal = notify_refusal(settings.notify or (), cwd, path_value)
    if refusal is not None:
        raise ConfigError(
            f"notify command refused (it runs outside the sandbox): {refusal}",
            hint="point notify at a program installed outside the workspace, by absolute path",
        )


def _open_hooks(
    prepared: Prepared,
    ctx: ToolContext,
    runlog: RunLogSink | None,
    thread_id: str,
    transcript_path: Path | None,
) -> HookSession | None:
    from oiexec.extensions.hooks import hooks_enabled

    settings = prepared.config.settings
    if not hooks_enabled(settings.features):
        return None
    sources = hook_sources(prepared.config, ctx.warn)
    if not sources:
        return None
    from oiexec.extensions.hook_events import HookSession
    from oiexec.extensions.hooks import HookRun, HookRunner, collect_handlers, log_fields

    handlers = collect_handlers(sources, ctx.warn)
    if not handlers:
        return None

    def record(run: HookRun) -> None:
        if runlog is not None:
            runlog.note("hook.run", **log_fields(run))

    env = {**os.environ, "OPENINTERPRETER_THREAD_ID": thread_id}
    runner = HookRunner(
        handlers,
        cwd=prepared.request.cwd,
        env=env,
        record=record,
        passed_env=settings.hooks_env_vars,
    )
    return HookSession(
        runner=runner,
        session_id=thread_id,
        turn_id=_new_turn_id(),
        cwd=prepared.request.cwd,
        model=settings.model,
        transcript_path=transcript_path,
        warn=ctx.warn,
    )


def hook_sources(
    config: LoadedConfig, warn: Callable[[str], None] | None = None
) -> list[tuple[str, HooksConfig]]:
    """The hooks.json files (user, then a trusted project's), then inline `[hooks]`; `warn`
    hears about a project file set aside (None when only checking the files). Raises
    `ConfigError` for a file that does not load."""
    from oiexec.config.loader import PROJECT_DIR, through_symlink
    from oiexec.extensions.hooks import HOOKS_FILE, read_hooks_file

    files = [config.home / HOOKS_FILE]
    project = config.project_root / PROJECT_DIR / HOOKS_FILE
    if config.trusted and through_symlink(config.project_root, project):
        # As the project's config.toml (oiexec.config.loader): these commands run outside
        # the sandbox, so they must come from a file commands could never have written.
        if warn is not None and os.path.lexists(project):
            warn(
                f"ignored {project}: it is reached through a symbolic link, which the "
                "sandbox cannot keep read-only; make .openinterpreter a real directory"
            )
    elif config.trusted:
        files.append(project)
    sources: list[tuple[str, HooksConfig]] = []
    for path in files:
        loaded = read_hooks_file(path)
        if loaded is not None:
            sources.append((str(path), loaded))
    sources.append(("config [hooks]", config.settings.hooks))
    return sources


class _StopHookAnswer:
    """The final-answer policy wrapped in the Stop hooks: a hook that blocks sends its reason
    back and the model continues, at most MAX_STOP_CONTINUATIONS times (as `--check` wraps
    the policy in the verify loop)."""

    def __init__(self, inner: FinalAnswerPolicy, session: HookSession) -> None:
        self._inner = inner
        self._session = session
        self._continuations = 0
        #: Answers since the last continuation: the inner policy (`--output-schema`) gets its
        #: own correction for each fresh answer, as under `--check`.
        self._answers = 0
        self.checkable = getattr(inner, "checkable", False)

    def accept(self, text: str, attempt: int) -> str | Retry:
        self._answers += 1
        verdict = self._inner.accept(text, self._answers)
        if isinstance(verdict, Retry) or self._continuations >= MAX_STOP_CONTINUATIONS:
            return verdict
        reason = self._session.stop(verdict, active=self._continuations > 0)
        if reason is None:
            return verdict
        self._continuations += 1
        self._answers = 0
        # No `error` item, as in Codex's stream (an SDK user's items match Codex's); the
        # person reading stderr and the run log still learn why the turn went on.
        self._session.warn(
            f"a Stop hook sent the model back ({self._continuations} of at most "
            f"{MAX_STOP_CONTINUATIONS}): {reason.strip().splitlines()[0]}"
        )
        return Retry(reason, shown=False)

    def present(self, text: str, items: ItemEmitter) -> None:
        self._inner.present(text, items)


def _new_turn_id() -> str:
    return str(uuid.uuid4())


def _no_note(event: str, **fields: Any) -> None:
    del event, fields
