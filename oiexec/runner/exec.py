"""The composition root of `interpreter exec`: config, provider, harness, sandbox, session and
sinks are put together here, the loop runs, and the outcome becomes reports and an exit code.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from oiexec import __version__
from oiexec.agent.loop import AgentLoop, LoopLimits, ModelOptions, schema_validator
from oiexec.config.loader import LoadedConfig, load_config
from oiexec.config.providers import resolve_api_key, resolve_provider
from oiexec.errors import (
    ExitCode,
    Interrupted,
    LimitExceeded,
    OiexecError,
    RunTimedOut,
    SandboxUnavailable,
    UsageError,
)
from oiexec.events import (
    CommandExecutionItem,
    ErrorItem,
    ItemCompleted,
    ThreadError,
    ThreadEvent,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    Usage,
)
from oiexec.output.dispatch import Dispatcher
from oiexec.output.human import HumanSink
from oiexec.output.jsonl import JsonlSink
from oiexec.protocols import EventSink, SessionStore
from oiexec.redact import redact, register_secret
from oiexec.runner.context import build_environment_context, read_images
from oiexec.runner.request import ExecRequest
from oiexec.runner.sandboxing import RefusalTracker, build_policy
from oiexec.runner.sessions import open_session
from oiexec.tools.base import ItemEmitter, ToolContext
from oiexec.types import HistoryItem, Message

GIT_CHECK_MESSAGE = (
    "Not inside a trusted directory and --skip-git-repo-check was not specified."
)


@dataclass
class RunResult:
    exit_code: ExitCode
    thread_id: str | None = None
    final_message: str | None = None
    failure: str | None = None
    limit: str | None = None
    commands: list[CommandExecutionItem] = field(default_factory=list)


class _CommandCollector:
    """Remembers completed commands for the JUnit report."""

    def __init__(self) -> None:
        self.commands: list[CommandExecutionItem] = []

    def emit(self, event: ThreadEvent) -> None:
        if isinstance(event, ItemCompleted) and isinstance(event.item, CommandExecutionItem):
            self.commands.append(event.item)

    def close(self) -> None:
        pass


class _SessionSink:
    """Mirrors public events into the rollout, so a killed run still shows what happened."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def emit(self, event: ThreadEvent) -> None:
        self._store.append("event_msg", {"type": "thread_event", "event": event.model_dump()})

    def close(self) -> None:
        pass


def run_exec(request: ExecRequest) -> RunResult:
    """Runs one exec invocation end to end. Raises OiexecError only for problems found before
    the thread starts (config, usage); everything later ends as `turn.failed`."""
    config = load_config(request.config)
    _check_git(request, config)
    output_schema = _read_output_schema(request.output_schema)
    provider_id, provider = resolve_provider(config.settings)
    api_key = resolve_api_key(provider_id, provider)
    register_secret(api_key)
    images = read_images(request.images)

    human = None if request.json else HumanSink(sys.stderr, color=_use_color(request.color))
    warn = human.warning if human else _stderr_warning
    for warning in (*request.warnings, *config.warnings):
        warn(warning)

    policy = build_policy(config.settings, request, trusted=config.trusted)
    session = open_session(request, config, provider_id)
    with contextlib.ExitStack() as stack:
        stack.callback(session.store.close)
        collector = _CommandCollector()
        sinks: list[EventSink] = [collector, _SessionSink(session.store)]
        sinks.insert(0, human if human else JsonlSink(sys.stdout))
        dispatcher = Dispatcher(sinks)
        stack.callback(dispatcher.close)
        if human:
            human.header(
                f"oiexec v{__version__}",
                [
                    ("workdir", str(request.cwd)),
                    ("model", config.settings.model),
                    ("provider", provider_id),
                    ("approval", "never"),
                    ("sandbox", policy.summary()),
                    ("reasoning effort", config.settings.model_reasoning_effort or "default"),
                    ("session id", session.store.thread_id),
                ],
            )
        return _run_thread(
            request, config, session, dispatcher, collector, human, warn, policy,
            provider_id, provider, api_key, images, output_schema, stack,
        )  # fmt: skip


def _run_thread(
    request: ExecRequest,
    config: LoadedConfig,
    session: Any,
    dispatcher: Dispatcher,
    collector: _CommandCollector,
    human: HumanSink | None,
    warn: Any,
    policy: Any,
    provider_id: str,
    provider: Any,
    api_key: str | None,
    images: Any,
    output_schema: dict[str, Any] | None,
    stack: contextlib.ExitStack,
) -> RunResult:
    from oiexec.harness.agents_md import discover_user_instructions
    from oiexec.harness.native import NativeHarness
    from oiexec.providers.registry import create_client
    from oiexec.sandbox import get_sandbox
    from oiexec.tools.shell_env import build_command_env

    store = session.store
    thread_id = store.thread_id
    result = RunResult(exit_code=ExitCode.SUCCESS, thread_id=thread_id)
    started = time.monotonic()
    deadline = started + request.timeout if request.timeout else None
    dispatcher.emit(ThreadStarted(thread_id=thread_id))
    settings = config.settings
    emitter = ItemEmitter(dispatcher.emit)

    baseline = _capture_baseline(request, warn)
    sandbox = RefusalTracker(get_sandbox(policy))
    env = build_command_env(
        settings.shell_environment_policy,
        base_env=dict(os.environ),
        provider_env_key=provider.env_key,
        sandbox_mode=policy.mode,
        network_disabled=policy.network_disabled,
        extra={"OPENINTERPRETER_THREAD_ID": thread_id, "OPENINTERPRETER_CI": "1"},
    )
    for secret in env.removed_secrets:
        register_secret(secret)
    ctx = ToolContext(
        cwd=request.cwd, sandbox=sandbox, items=emitter, env=env, warn=warn, deadline=deadline
    )
    stack.enter_context(ctx.cleanup)
    harness = NativeHarness(
        user_instructions=discover_user_instructions(
            request.cwd,
            home=config.home,
            max_bytes=settings.project_doc_max_bytes,
            fallback_filenames=settings.project_doc_fallback_filenames,
        ),
        environment_context=build_environment_context(request.cwd, policy),
        output_token_limit=settings.tool_output_token_limit,
    )
    ctx.cleanup.callback(harness.processes.close_all)
    client = create_client(
        provider_id,
        provider,
        api_key,
        extra_headers={"session-id": thread_id, "thread-id": thread_id, "originator": "oiexec"},
    )
    stack.callback(client.close)

    history: list[HistoryItem] = list(session.history)
    if not session.history:
        for item in harness.initial_context(request.cwd, policy):
            history.append(item)
            store.append("response_item", item.model_dump())
    store.append("turn_context", _turn_context(request, settings, policy))
    prompt = Message(role="user", text=request.prompt, images=images)
    history.append(prompt)
    store.append("response_item", prompt.model_dump())

    loop = AgentLoop(
        client=client,
        harness=harness,
        ctx=ctx,
        emit=dispatcher.emit,
        record=lambda item: store.append("response_item", item.model_dump()),
        options=ModelOptions(
            model=settings.model,
            reasoning_effort=settings.model_reasoning_effort,
            reasoning_summary=settings.model_reasoning_summary,
            output_schema=output_schema,
            prompt_cache_key=thread_id,
        ),
        limits=LoopLimits(max_turns=request.max_turns, deadline=deadline),
        on_step=human.step if human else (lambda _n: None),
        validate_final=schema_validator(output_schema) if output_schema else None,
    )
    usage = session.usage
    dispatcher.emit(TurnStarted())
    store.append("event_msg", {"type": "task_started"})
    try:
        with _deadline_alarm(deadline), _terminate_as_interrupt():
            outcome = loop.run(history, usage)
        usage = outcome.usage
        harness.plan.finish(ctx)
        harness.processes.close_all()
        if sandbox.refusals:
            raise SandboxUnavailable(
                f"sandbox unavailable: {sandbox.refusals[0]}",
            )
        result.final_message = outcome.final_message
        store.append("event_msg", {"type": "token_count", "total_token_usage": usage.model_dump()})
        dispatcher.emit(TurnCompleted(usage=usage))
    except (OiexecError, LimitExceeded) as exc:
        _close_open_work(harness, ctx)
        result.exit_code = exc.exit_code
        result.failure = redact(exc.message)
        result.limit = exc.limit if isinstance(exc, LimitExceeded) else None
        store.append("event_msg", {"type": "token_count", "total_token_usage": usage.model_dump()})
        dispatcher.emit(TurnFailed(error=ThreadError(message=result.failure)))
    except (KeyboardInterrupt, Interrupted):
        _close_open_work(harness, ctx)
        result.exit_code = ExitCode.INTERRUPTED
        result.failure = "interrupted"
        # As in Codex, an interrupted turn emits no turn.failed; the exit code says it.
        warn("interrupted")
    finally:
        store.append(
            "event_msg",
            {
                "type": "task_complete",
                "last_agent_message": result.final_message,
                "duration_ms": int((time.monotonic() - started) * 1000),
            },
        )
    result.commands = collector.commands
    _write_outputs(request, result, baseline, usage, settings.model, started, warn)
    if human and result.final_message is not None and result.exit_code == ExitCode.SUCCESS:
        sys.stdout.write(result.final_message + "\n")
        sys.stdout.flush()
    return result


def _close_open_work(harness: Any, ctx: ToolContext) -> None:
    with contextlib.suppress(Exception):
        harness.processes.close_all()
    with contextlib.suppress(Exception):
        harness.plan.finish(ctx)


def _write_outputs(
    request: ExecRequest,
    result: RunResult,
    baseline: Any,
    usage: Usage,
    model: str,
    started: float,
    warn: Any,
) -> None:
    # The last message is only written after a completed turn, so a stale file never
    # looks like an answer.
    if request.output_last_message and result.exit_code == ExitCode.SUCCESS:
        _write_text(request.output_last_message, result.final_message or "", warn)
    if request.diff and baseline is not None:
        try:
            _write_text(request.diff, redact(baseline.diff()), warn)
        except Exception as exc:  # a report must not turn a finished run into a crash
            warn(f"could not write --diff {request.diff}: {exc}")
    if request.junit:
        from oiexec.output.junit import RunReport, write_junit

        status = "success"
        if result.exit_code != ExitCode.SUCCESS:
            status = "limit" if result.limit else "failed"
        report = RunReport(
            prompt=request.prompt,
            thread_id=result.thread_id or "",
            model=model,
            status=status,
            failure_message=result.failure,
            limit_name=result.limit,
            exit_code=int(result.exit_code),
            duration_s=time.monotonic() - started,
            commands=[(c.command, c.exit_code, c.aggregated_output) for c in result.commands],
            final_message=result.final_message,
            usage=usage,
        )
        try:
            request.junit.parent.mkdir(parents=True, exist_ok=True)
            write_junit(request.junit, report)
        except OSError as exc:
            warn(f"could not write --junit {request.junit}: {exc}")


def _write_text(path: Path, text: str, warn: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        warn(f"could not write {path}: {exc}")


def _capture_baseline(request: ExecRequest, warn: Any) -> Any:
    if not request.diff:
        return None
    from oiexec.output.diff import Baseline

    try:
        return Baseline.capture(request.cwd)
    except Exception as exc:
        warn(f"--diff disabled: could not snapshot the workspace: {exc}")
        return None


def _turn_context(request: ExecRequest, settings: Any, policy: Any) -> dict[str, Any]:
    return {
        "cwd": str(request.cwd),
        "approval_policy": "never",
        "sandbox_policy": {
            "type": policy.mode,
            "network_access": not policy.network_disabled,
            "exclude_tmpdir_env_var": policy.exclude_tmpdir_env_var,
            "exclude_slash_tmp": policy.exclude_slash_tmp,
        },
        "model": settings.model,
        "model_provider": settings.model_provider,
        "effort": settings.model_reasoning_effort,
    }


def _check_git(request: ExecRequest, config: LoadedConfig) -> None:
    if request.skip_git_repo_check or request.dangerously_bypass:
        return
    if not (config.project_root / ".git").exists():
        raise UsageError(
            GIT_CHECK_MESSAGE,
            hint="Run inside a git repository, or pass --skip-git-repo-check.",
        )


def _read_output_schema(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"Failed to read output schema file {path}: {exc}") from exc
    if not isinstance(schema, dict):
        raise UsageError(f"Failed to read output schema file {path}: not a JSON object")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"Invalid output schema in {path}: {exc.message}") from exc
    return schema


def _use_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stderr.isatty()


def _stderr_warning(text: str) -> None:
    sys.stderr.write(redact(f"warning: {text}") + "\n")
    sys.stderr.flush()


def warning_item(emitter: ItemEmitter, text: str) -> ItemCompleted:
    return ItemCompleted(item=ErrorItem(id=emitter.next_id(), message=text))


@contextlib.contextmanager
def _deadline_alarm(deadline: float | None) -> Iterator[None]:
    """Makes `--timeout` hard: SIGALRM interrupts whatever the main thread is blocked on."""
    if deadline is None:
        yield
        return

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        raise RunTimedOut("time limit reached: the run exceeded --timeout")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """CI cancels jobs with SIGTERM: clean up (kill process groups, close the rollout) as for
    Ctrl-C."""

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
