"""`exec_command` and `write_stdin`: Codex's tools for running commands.

A command runs as `[shell, "-c", cmd]` through the command runner. If it is still running
after `yield_time_ms` it stays alive as a session the model polls or feeds with
`write_stdin`; its `command_execution` item completes when the process exits (or when the run
ends and the registry kills it). `apply_patch <<'EOF'` commands are applied as patches, as
Codex does, rather than run in the shell.
"""

from __future__ import annotations

import secrets
import time

from oiexec.core.errors import ToolInputError
from oiexec.core.redact import redact
from oiexec.core.tokens import approx_tokens, truncate_middle
from oiexec.tools.apply_patch import parse_heredoc_invocation
from oiexec.tools.command import (
    NotStarted,
    RunningCommand,
    deadline_bound,
    setup_failed,
    start_command,
)
from oiexec.tools.framework import Invocation
from oiexec.tools.patch_tool import run_patch
from oiexec.tools.process import ProcessSession, StdinClosed
from oiexec.tools.results import Result

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


def exec_command(inv: Invocation) -> Result:
    started = time.monotonic()
    cmd = inv.string("cmd") or ""
    if not cmd.strip():
        raise ToolInputError("exec_command: `cmd` must not be empty")
    workdir = inv.string("workdir")
    shell = inv.string("shell") or inv.rt.shell
    # Codex defaults to a login shell, but Debian's /etc/profile resets PATH, which drops
    # what CI set up (setup-python, venvs, nvm); headless runs keep the caller's.
    login = inv.boolean("login", default=False)
    yield_ms = _clamp(_number(inv, "yield_time_ms", DEFAULT_YIELD_MS), MIN_YIELD_MS, MAX_YIELD_MS)
    max_tokens = _max_tokens(inv)
    ctx = inv.ctx
    if inv.string("sandbox_permissions") == "require_escalated":
        ctx.warn(
            "exec_command asked for escalated permissions, impossible with approval "
            f"policy `never`; rejected: {cmd}"
        )
        raise ToolInputError(_ESCALATION_REFUSED)
    cwd = ctx.resolve(workdir) if workdir else ctx.cwd
    if not cwd.is_dir():
        raise ToolInputError(f"exec_command: `workdir` is not a directory: {cwd}")
    heredoc = parse_heredoc_invocation(cmd)
    if heredoc is not None:
        patch_cwd = cwd / heredoc.workdir if heredoc.workdir else cwd
        outcome = run_patch(heredoc.patch, ctx, cwd=patch_cwd)
        return Result(outcome.output, not outcome.ok)
    if ctx.remaining() == 0:
        return Result("exec_command: the run's time limit is reached; not run", True)
    argv = [shell, "-lc" if login else "-c", cmd]
    env = {**ctx.env, **inv.rt.env}
    try:
        run = start_command(ctx, inv.rt.processes, argv, cwd=cwd, env=env, tty=inv.boolean("tty"))
    except NotStarted as exc:
        if exc.declined:
            return Result(f"{exc.message}; {_SANDBOX_REFUSED}", True)
        return Result("\n".join([exc.message, *exc.notes]), True)
    return _collect(inv, run.session, run, started=started, yield_ms=yield_ms, limit=max_tokens)


def write_stdin(inv: Invocation) -> Result:
    started = time.monotonic()
    session_id = _number(inv, "session_id", 0)
    if not session_id.is_integer():
        raise ToolInputError("write_stdin: `session_id` must be a whole number")
    chars = inv.string("chars") or ""
    yield_ms = _number(inv, "yield_time_ms", WRITE_YIELD_MS)
    if chars:
        yield_ms = _clamp(yield_ms, MIN_YIELD_MS, MAX_YIELD_MS)
    else:
        yield_ms = _clamp(yield_ms, MIN_POLL_YIELD_MS, MAX_POLL_YIELD_MS)
    max_tokens = _max_tokens(inv)
    sid = int(session_id)
    session = inv.rt.processes.get(sid)
    if session is None:
        raise ToolInputError(
            f"write_stdin: no running process with session ID {sid} "
            "(it may have exited already; its last output was returned then)"
        )
    run = session.owner if isinstance(session.owner, RunningCommand) else None
    if chars:
        try:
            session.write(chars)
        except StdinClosed as exc:
            raise ToolInputError(f"write_stdin: cannot write to session {sid}: {exc}") from exc
    return _collect(inv, session, run, started=started, yield_ms=yield_ms, limit=max_tokens)


def _collect(
    inv: Invocation,
    session: ProcessSession,
    run: RunningCommand | None,
    *,
    started: float,
    yield_ms: float,
    limit: int,
) -> Result:
    """Wait for exit or the yield time (never past the run's deadline) and report."""
    wait_s, out_of_time = deadline_bound(inv.ctx, yield_ms / 1000)
    code = session.wait(wait_s)
    notes: list[str] = []
    if code is None and out_of_time:
        if run is not None:
            run.killed = True
        session.kill()
        code = session.wait(0)
        notes.append("The command was killed: the run's time limit (--timeout) was reached.")
    text = redact(session.take_output())
    if code is not None and run is not None:
        notes[:0] = run.finish()
    if setup_failed(session.prepared, code):
        body = (
            "sandbox setup failed: the sandbox could not start the command (launcher exit "
            f"status {code}), so the command did not run. Do not retry; finish and report it."
        )
        return Result("\n".join([body, "Output:", text, *notes]).rstrip("\n"), True)
    output = format_output(
        chunk_id=secrets.token_hex(3),
        wall_time=time.monotonic() - started,
        exit_code=code,
        session_id=run.session_id if run else None,
        text=text,
        max_tokens=limit,
    )
    if notes:
        output = output.rstrip("\n") + "\n\n" + "\n".join(notes)
    return Result(output)


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
        f"Output:\n{_cut(text, max_tokens)}"
    )


def _cut(text: str, max_tokens: int) -> str:
    """The output within `max_tokens`; a cut one is headed, as Codex 0.171 does, by its size."""
    body = truncate_middle(text, max_tokens)
    if body == text:
        return text
    return (
        f"Warning: truncated output (original token count: {approx_tokens(text)})\n"
        f"Total output lines: {len(text.splitlines())}\n\n{body}"
    )


def _max_tokens(inv: Invocation) -> int:
    requested = _number(inv, "max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
    if requested < 0:
        raise ToolInputError(f"{inv.entry.name}: `max_output_tokens` must not be negative")
    return min(int(requested), inv.rt.output_token_limit)


def _number(inv: Invocation, name: str, default: float) -> float:
    """A number the schema has checked; Python's JSON reader also lets `NaN` through."""
    value = inv.args.get(name)
    if value is None:
        return default
    if value != value:
        raise ToolInputError(f"{inv.entry.name}: `{name}` must be a number")
    return float(value)


def _clamp(value: float, low: int, high: int) -> float:
    return min(max(value, low), high)
