"""`exec_command` and `write_stdin`: Codex's native tools for running commands.

A command runs as `[shell, "-lc", cmd]` through the sandbox. If it is still running after
`yield_time_ms` it stays alive as a session the model polls or feeds with `write_stdin`; its
`command_execution` item completes when the process exits (or when the run ends and the
registry kills it).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import secrets
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.errors import SandboxUnavailable
from oiexec.core.events import CommandExecutionItem, CommandStatus
from oiexec.core.policy import PreparedCommand
from oiexec.core.protocols import Tool
from oiexec.core.redact import redact
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.tools.process import ProcessRegistry, ProcessSession, StdinClosed
from oiexec.tools.truncate import approx_tokens, truncate_middle

DEFAULT_SHELL = "/bin/bash"
DEFAULT_MAX_OUTPUT_TOKENS = 10_000
DEFAULT_YIELD_MS = 10_000
MIN_YIELD_MS, MAX_YIELD_MS = 250, 30_000
WRITE_YIELD_MS = 250
#: An empty `chars` is a poll: it may wait longer, and at least this long.
MIN_POLL_YIELD_MS, MAX_POLL_YIELD_MS = 5_000, 300_000

_ESCALATION_REFUSED = (
    "Escalated permissions are not available: the approval policy is `never`, so nobody can "
    "approve running this command outside the sandbox and it was not run. Work within the "
    "sandbox; if the task truly needs more access, finish and explain what is needed."
)
_SANDBOX_REFUSED = (
    "the command was not run. No command can run in this session, so do not retry: "
    "finish with what you can do without running commands and say why."
)

EXEC_COMMAND_SPEC = ToolSpec(
    name="exec_command",
    description=(
        "Runs a command in a shell and returns its output. If it is still running after "
        "yield_time_ms, returns a session ID to use with write_stdin."
    ),
    parameters={
        "type": "object",
        "properties": {
            "cmd": {"type": "string", "description": "Shell command to run."},
            "workdir": {
                "type": "string",
                "description": "Working directory; defaults to the turn's working directory.",
            },
            "shell": {"type": "string", "description": "Shell binary; defaults to /bin/bash."},
            "login": {
                "type": "boolean",
                "description": (
                    "Run the shell as a login shell (-lc); defaults to false, so the PATH "
                    "the pipeline set up is kept."
                ),
            },
            "tty": {
                "type": "boolean",
                "description": "Allocate a terminal (PTY); defaults to false (plain pipes).",
            },
            "yield_time_ms": {
                "type": "number",
                "description": "How long to wait for the command before returning (ms).",
            },
            "max_output_tokens": {
                "type": "number",
                "description": "Output beyond this many tokens is cut in the middle.",
            },
            "sandbox_permissions": {
                "type": "string",
                "enum": ["use_default", "require_escalated"],
                "description": "`require_escalated` asks to run outside the sandbox.",
            },
            "justification": {
                "type": "string",
                "description": "Why escalated permissions are needed.",
            },
            "prefix_rule": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Command prefix to approve for later runs, e.g. git pull.",
            },
        },
        "required": ["cmd"],
        "additionalProperties": False,
    },
)

WRITE_STDIN_SPEC = ToolSpec(
    name="write_stdin",
    description=(
        "Writes characters to a running exec_command session and returns its new output; "
        "empty chars just waits for more output."
    ),
    parameters={
        "type": "object",
        "properties": {
            "session_id": {
                "type": "number",
                "description": "Session ID returned by exec_command.",
            },
            "chars": {"type": "string", "description": "Characters to write; may be empty."},
            "yield_time_ms": {
                "type": "number",
                "description": "How long to wait for output before returning (ms).",
            },
            "max_output_tokens": {
                "type": "number",
                "description": "Output beyond this many tokens is cut in the middle.",
            },
        },
        "required": ["session_id"],
        "additionalProperties": False,
    },
)


class _BadArguments(Exception):
    pass


@dataclass
class _CommandRun:
    """A command's item while its process lives; finished exactly once."""

    item_id: str
    command: str
    items: ItemEmitter
    prepared: PreparedCommand
    session_id: int
    finished: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class _SessionTool:
    """What both tools share: the registry, the output cap and the refusal counter.

    `sandbox_refusals` counts commands the sandbox refused to run or failed to set up, so
    the runner can exit with the sandbox exit code (sum it over both tools).
    """

    def __init__(self, registry: ProcessRegistry, output_token_limit: int) -> None:
        self._registry = registry
        self._limit = output_token_limit
        self.sandbox_refusals = 0

    def _max_tokens(self, args: dict[str, Any]) -> int:
        requested = _number(args, "max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
        if requested < 0:
            raise _BadArguments("`max_output_tokens` must not be negative")
        return min(int(requested), self._limit)

    def _collect(
        self,
        call: ToolCall,
        ctx: ToolContext,
        session: ProcessSession,
        run: _CommandRun | None,
        *,
        started: float,
        yield_ms: float,
        max_tokens: int,
    ) -> ToolOutput:
        """Wait for exit or the yield time (never past the run's deadline) and report."""
        wait_s = yield_ms / 1000
        remaining = ctx.remaining()
        out_of_time = remaining is not None and remaining <= wait_s
        code = session.wait(min(wait_s, remaining) if remaining is not None else wait_s)
        notes: list[str] = []
        if code is None and out_of_time:
            session.kill()
            code = session.wait(0)
            notes.append("The command was killed: the run's time limit (--timeout) was reached.")
        text = redact(session.take_output())
        if code is not None and run is not None:
            notes[:0] = _finish(run, session, self._registry)
        if code is not None and code == session.prepared.setup_failure_exit_code:
            self.sandbox_refusals += 1
            body = (
                "sandbox setup failed: the sandbox could not start the command (launcher exit "
                f"status {code}), so the command did not run. Do not retry; finish and report it."
            )
            return _error(call, "\n".join([body, "Output:", text, *notes]).rstrip("\n"))
        output = format_output(
            chunk_id=secrets.token_hex(3),
            wall_time=time.monotonic() - started,
            exit_code=code,
            session_id=run.session_id if run else None,
            text=text,
            max_tokens=max_tokens,
        )
        if notes:
            output = output.rstrip("\n") + "\n\n" + "\n".join(notes)
        return ToolOutput(call_id=call.call_id, output=output, call_type=call.call_type)


class ExecCommandTool(_SessionTool):
    """`exec_command`: run a shell command in the sandbox."""

    def __init__(
        self,
        registry: ProcessRegistry,
        apply_patch: Tool | None = None,
        *,
        output_token_limit: int = DEFAULT_MAX_OUTPUT_TOKENS,
        default_shell: str = DEFAULT_SHELL,
    ) -> None:
        super().__init__(registry, output_token_limit)
        self._apply_patch = apply_patch
        self._shell = default_shell

    @property
    def spec(self) -> ToolSpec:
        return EXEC_COMMAND_SPEC

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        started = time.monotonic()
        try:
            args = _parse_arguments(call.arguments)
            cmd = _string(args, "cmd", required=True) or ""
            workdir = _string(args, "workdir")
            shell = _string(args, "shell") or self._shell
            # Codex defaults to a login shell, but Debian's /etc/profile resets PATH, which
            # drops what CI set up (setup-python, venvs, nvm); headless runs keep the caller's.
            login = _boolean(args, "login", default=False)
            tty = _boolean(args, "tty", default=False)
            yield_ms = _clamp(
                _number(args, "yield_time_ms", DEFAULT_YIELD_MS), MIN_YIELD_MS, MAX_YIELD_MS
            )
            max_tokens = self._max_tokens(args)
            permissions = _string(args, "sandbox_permissions") or "use_default"
            _string(args, "justification")
            _string_list(args, "prefix_rule")
            if permissions not in ("use_default", "require_escalated"):
                raise _BadArguments(
                    "`sandbox_permissions` must be `use_default` or `require_escalated`"
                )
        except _BadArguments as exc:
            return _error(call, f"exec_command: {exc}")
        if permissions == "require_escalated":
            ctx.warn(
                "exec_command asked for escalated permissions, impossible with approval "
                f"policy `never`; rejected: {cmd}"
            )
            return _error(call, _ESCALATION_REFUSED)
        cwd = ctx.resolve(workdir) if workdir else ctx.cwd
        if not cwd.is_dir():
            return _error(call, f"exec_command: `workdir` is not a directory: {cwd}")
        intercepted = self._heredoc_patch(cmd) if self._apply_patch is not None else None
        if intercepted is not None:
            patch, patch_dir = intercepted
            patch_cwd = cwd / patch_dir if patch_dir else cwd
            return self._run_patch(call, patch, dataclasses.replace(ctx, cwd=patch_cwd))
        argv = [shell, "-lc" if login else "-c", cmd]
        command = shlex.join(argv)
        try:
            prepared = ctx.sandbox.prepare(argv, cwd=cwd, env=dict(ctx.env))
        except SandboxUnavailable as exc:
            return self._refused(call, ctx, command, exc)
        if ctx.remaining() == 0:
            _after(prepared)
            return _error(call, "exec_command: the run's time limit is reached; not run")
        item_id = ctx.items.next_id()
        ctx.items.started(CommandExecutionItem(id=item_id, command=command))
        try:
            session_id, session = self._registry.spawn(prepared, tty=tty)
        except OSError as exc:
            notes = _after(prepared)
            message = f"failed to start the command: {exc}"
            _emit_completed(ctx.items, item_id, command, message, None, "failed")
            return _error(call, "\n".join([message, *notes]))
        run = _CommandRun(item_id, command, ctx.items, prepared, session_id)
        session.owner = run
        session.on_close = lambda s: _finish(run, s, self._registry)
        return self._collect(
            call, ctx, session, run, started=started, yield_ms=yield_ms, max_tokens=max_tokens
        )

    def _refused(
        self, call: ToolCall, ctx: ToolContext, command: str, exc: SandboxUnavailable
    ) -> ToolOutput:
        self.sandbox_refusals += 1
        reason = exc.render()
        if not reason.lower().startswith("sandbox unavailable"):
            reason = f"sandbox unavailable: {reason}"
        item_id = ctx.items.next_id()
        _emit_completed(ctx.items, item_id, command, reason, None, "declined")
        return _error(call, f"{reason}; {_SANDBOX_REFUSED}")

    @staticmethod
    def _heredoc_patch(cmd: str) -> tuple[str, str | None] | None:
        """(patch, `cd` directory) of an `apply_patch <<'EOF'` command, else None.

        apply_patch.py is imported lazily and defensively: without its hooks the command
        simply runs in the shell.
        """
        try:
            module = importlib.import_module("oiexec.tools.apply_patch")
        except ImportError:
            return None
        parse = getattr(module, "parse_heredoc_invocation", None)
        extract = getattr(module, "extract_heredoc_patch", None)
        try:
            if callable(parse):
                found = parse(cmd)
                patch, workdir = getattr(found, "patch", None), getattr(found, "workdir", None)
            elif callable(extract):
                patch, workdir = extract(cmd), None
            else:
                return None
        except Exception:
            return None
        if not isinstance(patch, str):
            return None
        return patch, workdir if isinstance(workdir, str) else None

    def _run_patch(self, call: ToolCall, patch: str, ctx: ToolContext) -> ToolOutput:
        assert self._apply_patch is not None
        inner = ToolCall(
            call_id=call.call_id, name="apply_patch", arguments=patch, call_type="custom"
        )
        result = self._apply_patch.run(inner, ctx)
        return ToolOutput(
            call_id=call.call_id,
            output=result.output,
            call_type=call.call_type,
            is_error=result.is_error,
        )


class WriteStdinTool(_SessionTool):
    """`write_stdin`: feed or poll a session `exec_command` left running."""

    def __init__(
        self, registry: ProcessRegistry, *, output_token_limit: int = DEFAULT_MAX_OUTPUT_TOKENS
    ) -> None:
        super().__init__(registry, output_token_limit)

    @property
    def spec(self) -> ToolSpec:
        return WRITE_STDIN_SPEC

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        started = time.monotonic()
        try:
            args = _parse_arguments(call.arguments)
            session_id = _session_id(args)
            chars = _string(args, "chars") or ""
            yield_ms = _number(args, "yield_time_ms", WRITE_YIELD_MS)
            if chars:
                yield_ms = _clamp(yield_ms, MIN_YIELD_MS, MAX_YIELD_MS)
            else:
                yield_ms = _clamp(yield_ms, MIN_POLL_YIELD_MS, MAX_POLL_YIELD_MS)
            max_tokens = self._max_tokens(args)
        except _BadArguments as exc:
            return _error(call, f"write_stdin: {exc}")
        session = self._registry.get(session_id)
        if session is None:
            return _error(
                call,
                f"write_stdin: no running process with session ID {session_id} "
                "(it may have exited already; its last output was returned then)",
            )
        run = session.owner if isinstance(session.owner, _CommandRun) else None
        if chars:
            try:
                session.write(chars)
            except StdinClosed as exc:
                return _error(call, f"write_stdin: cannot write to session {session_id}: {exc}")
        return self._collect(
            call, ctx, session, run, started=started, yield_ms=yield_ms, max_tokens=max_tokens
        )


def format_output(
    *,
    chunk_id: str,
    wall_time: float,
    exit_code: int | None,
    session_id: int | None,
    text: str,
    max_tokens: int,
) -> str:
    """The text the model reads, in Codex's layout."""
    status = (
        f"Process exited with code {exit_code}"
        if exit_code is not None
        else f"Process running with session ID {session_id}"
    )
    return (
        f"Chunk ID: {chunk_id}\n"
        f"Wall time: {wall_time:.4f} seconds\n"
        f"{status}\n"
        f"Original token count: {approx_tokens(text)}\n"
        f"Output:\n{truncate_middle(text, max_tokens)}"
    )


def _finish(
    run: _CommandRun, session: ProcessSession, registry: ProcessRegistry | None
) -> list[str]:
    """Complete the item of an exited (or killed) command once; returns `after()` notes."""
    with run.lock:
        if run.finished:
            return []
        run.finished = True
    notes = _after(run.prepared)
    code = session.exit_code
    aggregated = redact(session.output_so_far())
    if code is not None and code == run.prepared.setup_failure_exit_code:
        aggregated = f"sandbox setup failed (launcher exit status {code})\n{aggregated}"
    status: CommandStatus = "completed" if code == 0 else "failed"
    _emit_completed(run.items, run.item_id, run.command, aggregated, code, status)
    if registry is not None:
        registry.release(run.session_id)
    return notes


def _after(prepared: PreparedCommand) -> list[str]:
    try:
        return list(prepared.after())
    except Exception as exc:  # a broken post-command check must not lose the result
        return [f"post-command sandbox check failed: {exc}"]


def _emit_completed(
    items: ItemEmitter,
    item_id: str,
    command: str,
    output: str,
    exit_code: int | None,
    status: CommandStatus,
) -> None:
    items.completed(
        CommandExecutionItem(
            id=item_id,
            command=command,
            aggregated_output=output,
            exit_code=exit_code,
            status=status,
        )
    )


def _error(call: ToolCall, message: str) -> ToolOutput:
    return ToolOutput(call_id=call.call_id, output=message, call_type=call.call_type, is_error=True)


# --- argument parsing --------------------------------------------------------------------


def _parse_arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _BadArguments(f"arguments are not valid JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise _BadArguments("arguments must be a JSON object")
    return value


def _string(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise _BadArguments(f"missing required field `{name}` (a string)")
        return None
    if not isinstance(value, str):
        raise _BadArguments(f"`{name}` must be a string")
    if required and not value.strip():
        raise _BadArguments(f"`{name}` must not be empty")
    return value


def _boolean(args: dict[str, Any], name: str, *, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _BadArguments(f"`{name}` must be a boolean")
    return value


def _number(args: dict[str, Any], name: str, default: float) -> float:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _BadArguments(f"`{name}` must be a number")
    return float(value)


def _string_list(args: dict[str, Any], name: str) -> list[str] | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _BadArguments(f"`{name}` must be an array of strings")
    return value


def _session_id(args: dict[str, Any]) -> int:
    if args.get("session_id") is None:
        raise _BadArguments("missing required field `session_id` (a number)")
    value = _number(args, "session_id", 0)
    if not value.is_integer():
        raise _BadArguments("`session_id` must be a whole number")
    return int(value)


def _clamp(value: float, low: int, high: int) -> float:
    return min(max(value, low), high)
