"""Shell tools of every harness (Bash, Shell, run_shell_command, bash, exec_shell): one
command in a fresh shell through the sandbox, reported as a `command_execution` item, and
rendered in the harness's words."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.errors import SandboxUnavailable, ToolInputError
from oiexec.core.events import CommandExecutionItem, CommandStatus
from oiexec.core.redact import redact
from oiexec.tools.adapters.base import Invocation, Result, Runtime, register
from oiexec.tools.fs.render import mini_observation

__all__ = ["ShellRun", "run_command"]


@dataclass(frozen=True)
class ShellRun:
    output: str
    exit_code: int | None
    timed_out: bool = False
    refused: str | None = None
    notes: tuple[str, ...] = ()


def _complete(
    ctx: ToolContext,
    item_id: str,
    command: str,
    output: str,
    code: int | None,
    status: CommandStatus,
) -> None:
    ctx.items.completed(
        CommandExecutionItem(
            id=item_id,
            command=command,
            aggregated_output=output,
            exit_code=code,
            status=status,
        )
    )


def run_command(
    ctx: ToolContext, rt: Runtime, command: str, *, cwd: Path, timeout_s: float
) -> ShellRun:
    """Run `command` with `rt.shell -c`, waiting at most `timeout_s` (and never past the run's
    deadline); the group is killed when time is up."""
    argv = [rt.shell, "-c", command]
    shown = shlex.join(argv)
    env = {**ctx.env, **rt.env}
    try:
        prepared = ctx.sandbox.prepare(argv, cwd=cwd, env=env)
    except SandboxUnavailable as exc:
        reason = exc.render()
        _complete(ctx, ctx.items.next_id(), shown, reason, None, "declined")
        return ShellRun("", None, refused=reason)
    item_id = ctx.items.next_id()
    ctx.items.started(CommandExecutionItem(id=item_id, command=shown))
    try:
        session_id, session = rt.processes.spawn(prepared)
    except OSError as exc:
        prepared.after()
        _complete(ctx, item_id, shown, str(exc), None, "failed")
        return ShellRun(f"failed to start the command: {exc}", None)
    remaining = ctx.remaining()
    wait = timeout_s if remaining is None else min(timeout_s, remaining)
    code = session.wait(wait)
    timed_out = code is None
    if timed_out:
        code = session.kill()
    output = redact(session.output_so_far())
    notes: list[str] = []
    try:
        notes = list(prepared.after())
    except Exception as exc:  # a broken post-command check must not lose the result
        notes = [f"post-command sandbox check failed: {exc}"]
    if code is not None and code == prepared.setup_failure_exit_code:
        notes.insert(0, f"sandbox setup failed (launcher exit status {code}); not run")
    status: CommandStatus = "completed" if code == 0 and not timed_out else "failed"
    _complete(ctx, item_id, shown, output, code, status)
    rt.processes.release(session_id)
    return ShellRun(output, code, timed_out, None, tuple(notes))


def run_persistent(ctx: ToolContext, rt: Runtime, command: str, *, timeout_s: float) -> ShellRun:
    """Run `command` in the run's long-lived shell (state carries over between calls)."""
    from oiexec.tools.adapters.persistent import PersistentShell

    shell = rt.extras.get(_PERSISTENT)
    if not isinstance(shell, PersistentShell):
        shell = PersistentShell(ctx, shell=rt.shell, env={**ctx.env, **rt.env})
        rt.extras[_PERSISTENT] = shell
    shown = shlex.join([rt.shell, "-c", command])
    item_id = ctx.items.next_id()
    ctx.items.started(CommandExecutionItem(id=item_id, command=shown))
    outcome = shell.run(command, timeout_s)
    if outcome.refused is not None:
        _complete(ctx, item_id, shown, outcome.refused, None, "declined")
        return ShellRun("", None, refused=outcome.refused)
    output = redact(outcome.output)
    code = outcome.exit_code
    status: CommandStatus = "completed" if code == 0 and not outcome.timed_out else "failed"
    _complete(ctx, item_id, shown, output, code, status)
    return ShellRun(output, code, outcome.timed_out, None, outcome.notes)


_PERSISTENT = "persistent_shell"


def _cut(text: str, limit: int) -> str:
    """Head and tail of `text` around an elision note, at most about `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return (
        f"{text[:half]}\n\n... [{len(text) - 2 * half} characters truncated] ...\n\n{text[-half:]}"
    )


def _timeout_seconds(inv: Invocation) -> float:
    unit = inv.option("timeout_unit", "s")
    default_s = float(inv.option("default_timeout_s", 120))
    max_s = float(inv.option("max_timeout_s", 600))
    raw = inv.args.get("timeout")
    if raw is None or isinstance(raw, bool) or not isinstance(raw, int | float):
        return default_s
    seconds = raw / 1000 if unit == "ms" else float(raw)
    if seconds <= 0:
        raise ToolInputError("timeout must be positive.")
    return min(seconds, max_s)


@register("shell")
def shell(inv: Invocation) -> Result:
    command = inv.string("command")
    if not command or not command.strip():
        raise ToolInputError(f"`{inv.model_name('command')}` must not be empty.")
    workdir = inv.string("workdir")
    cwd = inv.ctx.resolve(workdir) if workdir else inv.ctx.cwd
    if not cwd.is_dir():
        raise ToolInputError(f"Directory does not exist: {cwd}")
    background = inv.rt.extras.get("background")
    if background is not None:
        background.sweep()
    if inv.boolean("background"):
        from oiexec.tools.adapters.background import start_background

        return start_background(inv, command, cwd)
    timeout_s = _timeout_seconds(inv)
    if inv.option("persistent"):
        run = run_persistent(inv.ctx, inv.rt, command, timeout_s=timeout_s)
    else:
        run = run_command(inv.ctx, inv.rt, command, cwd=cwd, timeout_s=timeout_s)
    result = render_shell(inv.render, run, command=command, timeout_s=timeout_s, inv=inv)
    marker = inv.option("submit_marker")
    if marker and run.exit_code == 0 and not run.timed_out:
        lines = run.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == marker:
            return Result(result.text, result.is_error, submission="".join(lines[1:]))
    return result


def render_shell(
    style: str, run: ShellRun, *, command: str, timeout_s: float, inv: Invocation | None = None
) -> Result:
    """The result of a command in the harness's convention."""
    if run.refused is not None:
        return Result(f"{run.refused}; the command was not run.", True)
    output = run.output
    if run.notes:
        output = (
            output + ("\n" if output and not output.endswith("\n") else "") + "\n".join(run.notes)
        )
    code = run.exit_code
    failed = code != 0 or run.timed_out
    timeout_note = f"Command timed out after {timeout_s:g} seconds and was killed."
    limit = int(inv.option("max_output_chars", 30_000)) if inv is not None else 30_000
    if style == "claude":
        text = _cut(output.rstrip("\n"), limit)
        if run.timed_out:
            text = f"{text}\n{timeout_note}".strip()
        if failed:
            return Result(f"{text}\nExit code {code}".strip(), True)
        return Result(text or "(Bash completed with no output)")
    if style == "kimi-code":
        text = _cut(output.rstrip("\n"), limit)
        if run.timed_out:
            return Result(f"{text}\n{timeout_note}".strip(), True)
        if failed:
            return Result(f"{text}\nCommand failed with exit code: {code}".strip(), True)
        return Result(text or "<system>Tool output is empty.</system>")
    if style == "kimi-cli":
        text = _cut(output, limit)
        if run.timed_out:
            head = f"<system>ERROR: Command killed by timeout ({timeout_s:g}s)</system>"
        elif failed:
            head = f"<system>ERROR: Command failed with exit code: {code}.</system>"
        else:
            head = "<system>Command executed successfully.</system>"
        return Result("\n".join(p for p in (head, text) if p), failed)
    if style == "qwen":
        text = _cut(output.rstrip("\n"), limit) or "(empty)"
        if run.timed_out:
            text += f"\n{timeout_note}"
        if failed:
            return Result(f"{text}\nExit Code: {code}", False)
        return Result(text)
    if style == "opencode":
        text = _cut(output.rstrip("\n"), limit) or "(no output)"
        if run.timed_out:
            text += f"\n\n<bash_metadata>\n{timeout_note}\n</bash_metadata>"
        elif failed:
            text += f"\n\n<bash_metadata>\nexit code: {code}\n</bash_metadata>"
        return Result(text)
    if style == "deepseek":
        text = _cut(output.rstrip("\n"), limit)
        if run.timed_out:
            return Result(f"{timeout_note}\nSTDOUT:\n{text}\nSTDERR:\n", True)
        if failed:
            return Result(f"Command failed (exit code: {code})\nSTDOUT:\n{text}\nSTDERR:\n", True)
        return Result(text or "(no output)")
    if style == "mini":
        exception = timeout_note if run.timed_out else None
        return Result(
            mini_observation(code if code is not None else -1, output, exception=exception)
        )
    if style == "swe":
        text = output
        if run.timed_out and not run.notes:
            text += f"\n{timeout_note}"
        return Result(text, failed)
    text = _cut(output, limit)
    return Result(f"Exit code: {code}\nOutput:\n{text}", failed)
