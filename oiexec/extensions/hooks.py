"""Hook commands: which ones are configured, and running them.

Hooks come, in this order, from `$OPENINTERPRETER_HOME/hooks.json`, the project's
`.openinterpreter/hooks.json` (trusted projects only), and the inline `[hooks]` of the merged
config (whose project layer is itself read only when trusted). Every matching handler runs;
handlers of one event run at the same time, as in Codex.

A hook is a shell command (`/bin/sh -c`) run in the working directory with the user's
environment, outside the command sandbox: it is the user's own program, not the model's. It
reads one JSON object on stdin (Codex's field names) and answers with its exit status and
stdout. It is killed with its whole process group when its `timeout` passes.

Since it runs outside the sandbox, a hook whose program lies where sandboxed commands can
write (`./ci/guard.sh`, a `.venv/bin` first on PATH) is refused before the run starts, and
its environment loses credentials config does not pass (`hooks_env_vars`) and the PATH
entries commands could write (oiexec.extensions.outside).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oiexec.config.hook_table import RUN_EVENTS, HooksConfig
from oiexec.core.errors import ConfigError
from oiexec.core.interrupts import uninterruptible
from oiexec.core.redact import redact
from oiexec.core.userfile import CONFIG_MAX, read_user_file_if_exists, user_text
from oiexec.extensions.outside import command_refusal, outside_env

__all__ = [
    "HOOKS_FILE",
    "HookHandler",
    "HookRun",
    "HookRunner",
    "collect_handlers",
    "hooks_enabled",
    "log_fields",
    "read_hooks_file",
    "refuse_untrusted",
]

HOOKS_FILE = "hooks.json"
#: Events whose matcher is ignored (Codex: they have nothing to match against).
_UNMATCHED_EVENTS = frozenset({"UserPromptSubmit", "Stop"})
#: How much of a hook's output the run log keeps.
_LOG_CHARS = 2000


@dataclass(frozen=True)
class HookHandler:
    event: str
    matcher: str | None
    command: str
    timeout_s: float
    #: Where it was configured (a hooks.json path, or "config").
    source: str

    def matches(self, inputs: Sequence[str]) -> bool:
        if self.event in _UNMATCHED_EVENTS or self.matcher in (None, "", "*"):
            return True
        try:
            pattern = re.compile(self.matcher)
        except re.error:
            return False  # reported once when the handlers are collected
        return any(pattern.search(value) for value in inputs)


@dataclass(frozen=True)
class HookRun:
    handler: HookHandler
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    #: Why the command could not be started.
    error: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the hook did not complete normally (None when it exited, whatever its code)."""
        if self.error is not None:
            return f"could not start: {self.error}"
        if self.timed_out:
            return f"timed out after {self.handler.timeout_s:g}s and was killed"
        return None

    def message(self) -> str:
        """What the hook said: stderr, else stdout (trimmed)."""
        return self.stderr.strip() or self.stdout.strip()

    def json_output(self) -> dict[str, Any] | None:
        """stdout as a JSON object, when it is one."""
        text = self.stdout.strip()
        if not text.startswith("{"):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


def hooks_enabled(features: Mapping[str, bool]) -> bool:
    """`[features] hooks = false` (Codex's key; `codex_hooks` is its older alias)."""
    return features.get("hooks", features.get("codex_hooks", True)) is not False


def read_hooks_file(path: Path) -> HooksConfig | None:
    """A `hooks.json` (`{"hooks": {Event: [groups]}}`), None when there is none."""
    what = f"cannot read {path}"
    raw = read_user_file_if_exists(path, name=what, cap=CONFIG_MAX, error=ConfigError)
    if raw is None:
        return None
    text = user_text(raw, name=what, error=ConfigError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to be a hooks file") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise ConfigError(f'{path} must be a JSON object like {{"hooks": {{"PreToolUse": [...]}}}}')
    try:
        return HooksConfig.model_validate(data.get("hooks", {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"{path} has invalid hooks: {problems}") from exc


def collect_handlers(
    sources: Sequence[tuple[str, HooksConfig]], warn: Callable[[str], None]
) -> list[HookHandler]:
    """The command handlers of the events a run fires; what exec does not run is said once."""
    handlers: list[HookHandler] = []
    for source, config in sources:
        for event in HooksConfig.model_fields:
            groups = getattr(config, event)
            if groups and event not in RUN_EVENTS:
                warn(f"{event} hooks in {source} have no effect in exec (the event never occurs)")
                continue
            for group in groups:
                _check_matcher(group.matcher, event, source, warn)
                for hook in group.hooks:
                    if hook.type != "command" or hook.command is None:
                        warn(f'{event} hook of type "{hook.type}" in {source} is not run by exec')
                        continue
                    handlers.append(
                        HookHandler(
                            event=event,
                            matcher=group.matcher,
                            command=hook.command,
                            timeout_s=hook.timeout,
                            source=source,
                        )
                    )
    return handlers


def _check_matcher(
    matcher: str | None, event: str, source: str, warn: Callable[[str], None]
) -> None:
    if matcher in (None, "", "*") or event in _UNMATCHED_EVENTS:
        return
    try:
        re.compile(matcher)
    except re.error as exc:
        warn(
            f"hook matcher `{matcher}` for {event} in {source} is not a valid regular "
            f"expression ({exc}); its hooks never run"
        )


def refuse_untrusted(handlers: Sequence[HookHandler], cwd: Path, path_value: str) -> None:
    """Raises `ConfigError` naming every hook whose program lies where sandboxed commands can
    write; checked before the run starts, so a guard hook is never silently skipped."""
    refused = []
    for handler in handlers:
        why = command_refusal(handler.command, cwd, path_value)
        if why is not None:
            refused.append(f"{handler.event} hook `{handler.command}` in {handler.source}: {why}")
    if refused:
        raise ConfigError(
            "hook commands refused (they run outside the sandbox): " + "; ".join(refused),
            hint="point each hook at a program installed outside the workspace and the "
            "writable roots, by absolute path",
        )


class HookRunner:
    """Runs the handlers of one event with its payload; records every run."""

    def __init__(
        self,
        handlers: Sequence[HookHandler],
        *,
        cwd: Path,
        env: Mapping[str, str],
        record: Callable[[HookRun], None],
        passed_env: Sequence[str] = (),
    ) -> None:
        self._handlers = list(handlers)
        self._cwd = cwd
        # No credential unless config passes it, no PATH entry a sandboxed command can write.
        self._env = outside_env(env, passed_env)
        self._record = record
        #: Hooks running now, so an interrupt kills the ones other threads wait on too.
        self._live: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def has(self, event: str) -> bool:
        return any(h.event == event for h in self._handlers)

    def run(
        self, event: str, payload: Mapping[str, Any], matcher_inputs: Sequence[str] = ()
    ) -> list[HookRun]:
        selected = [h for h in self._handlers if h.event == event and h.matches(matcher_inputs)]
        if not selected:
            return []
        stdin = json.dumps(payload, ensure_ascii=False)
        pool = ThreadPoolExecutor(max_workers=min(8, len(selected))) if len(selected) > 1 else None
        try:
            if pool is None:
                runs = [self._run_one(selected[0], stdin)]
            else:
                runs = list(pool.map(lambda h: self._run_one(h, stdin), selected))
        except BaseException:
            self._kill_live()  # a signal: end every hook now, not at its timeout
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        for run in runs:
            self._record(run)
        return runs

    def _run_one(self, handler: HookHandler, stdin: str) -> HookRun:
        started = time.monotonic()
        # An interrupt between the start and the registration would leave the hook unkilled.
        with uninterruptible():
            try:
                process = subprocess.Popen(
                    ["/bin/sh", "-c", handler.command],
                    cwd=self._cwd,
                    env=self._env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    # Its own process group, so a timeout kills what it started too.
                    start_new_session=True,
                )
            except OSError as exc:
                return HookRun(handler, None, "", "", 0.0, error=exc.strerror or str(exc))
            with self._lock:
                self._live.add(process)
        try:
            return self._wait(handler, process, stdin, started)
        finally:
            with self._lock:
                self._live.discard(process)

    def _kill_live(self) -> None:
        with self._lock:
            live = list(self._live)
        for process in live:
            _kill_group(process)

    def _wait(
        self, handler: HookHandler, process: subprocess.Popen[bytes], stdin: str, started: float
    ) -> HookRun:
        try:
            out, err = process.communicate(stdin.encode(), timeout=handler.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, err = process.communicate()
            return HookRun(
                handler,
                None,
                _text(out),
                _text(err),
                time.monotonic() - started,
                timed_out=True,
            )
        except BaseException:
            _kill_group(process)  # an interrupt must not leave the hook behind
            process.wait()
            raise
        return HookRun(
            handler, process.returncode, _text(out), _text(err), time.monotonic() - started
        )


def log_fields(run: HookRun) -> dict[str, Any]:
    """What the run log keeps of a hook run (secrets redacted, then the output cut: a cut
    first could leave part of a secret that no longer matches)."""
    return {
        "hook_event": run.handler.event,
        "command": run.handler.command,
        "source": run.handler.source,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "error": run.error,
        "duration_s": round(run.duration_s, 3),
        "stdout": redact(run.stdout)[:_LOG_CHARS],
        "stderr": redact(run.stderr)[:_LOG_CHARS],
    }


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
