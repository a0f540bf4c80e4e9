"""The shell tool of every manifest harness (Bash, Shell, run_shell_command, bash,
exec_shell): one command in a fresh shell (or the run's persistent shell) through the command
runner, worded by the tool's style."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.redact import redact
from oiexec.tools.adapters.background import reap, start_background
from oiexec.tools.adapters.persistent import run_persistent
from oiexec.tools.adapters.saved import save_output
from oiexec.tools.command import NotStarted, deadline_bound, setup_failed, start_command
from oiexec.tools.framework import Invocation, Runtime
from oiexec.tools.options import ShellOptions
from oiexec.tools.results import CommandRun, Result

__all__ = ["run_command"]


def run_command(
    ctx: ToolContext,
    rt: Runtime,
    command: str,
    *,
    cwd: Path,
    timeout_s: float,
    shell: str | None = None,
) -> CommandRun:
    """Run `command` with `shell -c` (default `rt.shell`), waiting at most `timeout_s` (and
    never past the run's deadline); the group is killed when time is up."""
    argv = [shell or rt.shell, "-c", command]
    try:
        running = start_command(ctx, rt.processes, argv, cwd=cwd, env={**ctx.env, **rt.env})
    except NotStarted as exc:
        if exc.declined:
            return CommandRun("", None, refused=exc.message)
        return CommandRun(exc.message, None, notes=exc.notes)
    session = running.session
    code = session.wait(deadline_bound(ctx, timeout_s)[0])
    timed_out = code is None
    if timed_out:
        running.killed = True
        code = session.kill()
    output = redact(session.output_so_far())
    notes = running.finish()
    if setup_failed(running.prepared, code):
        notes.insert(0, f"sandbox setup failed (launcher exit status {code}); not run")
    killed_by = code - 128 if timed_out and code is not None and code > 128 else None
    return CommandRun(
        output, code, timed_out, None, tuple(notes), pgid=session.pid, signal=killed_by
    )


def _shell_path(inv: Invocation, opts: ShellOptions) -> str | None:
    """The manifest's `shell` for this tool, as the emulated product starts it: the name as
    given (its error messages then say `bash: line 1: ...`), or with `shell_resolved` the
    full path PATH gives (opencode's `/usr/bin/bash: ...`)."""
    name = opts.shell
    if not name:
        return None
    if opts.shell_resolved:
        return shutil.which(name) or inv.rt.shell
    return name


def _timeout_seconds(inv: Invocation, opts: ShellOptions) -> float:
    raw = inv.args.get("timeout")
    if raw is None or isinstance(raw, bool) or not isinstance(raw, int | float):
        return float(opts.default_timeout_s)
    seconds = raw / 1000 if opts.timeout_unit == "ms" else float(raw)
    if seconds <= 0:
        raise ToolInputError("timeout must be positive.")
    return min(seconds, float(opts.max_timeout_s))


def shell(inv: Invocation) -> Result:
    command = inv.string("command")
    if not command or not command.strip():
        raise ToolInputError(f"`{inv.model_name('command')}` must not be empty.")
    workdir = inv.string("workdir")
    cwd = inv.ctx.resolve(workdir) if workdir else inv.ctx.cwd
    if not cwd.is_dir():
        raise ToolInputError(f"Directory does not exist: {cwd}")
    reap(inv.rt)
    opts = inv.opts(ShellOptions)
    if inv.boolean("background"):
        return start_background(inv, command, cwd, opts)
    timeout_s = _timeout_seconds(inv, opts)
    if opts.persistent:
        run = run_persistent(inv.ctx, inv.rt, command, timeout_s=timeout_s)
    else:
        run = run_command(
            inv.ctx, inv.rt, command, cwd=cwd, timeout_s=timeout_s, shell=_shell_path(inv, opts)
        )
    if run.refused is not None:
        return Result(f"{run.refused}; the command was not run.", True)
    limit = opts.max_output_chars
    run = dataclasses.replace(run, command=command, directory=workdir)
    max_lines = opts.max_output_lines
    too_long = len(run.text) > limit or (max_lines and run.text.count("\n") >= max_lines)
    if too_long and opts.save_long_output:
        run = dataclasses.replace(run, saved_to=save_output(inv.rt, run.text))
    result = inv.style.command_result(run, timeout_s=timeout_s, max_chars=limit)
    marker = opts.submit_marker
    if marker and run.exit_code == 0 and not run.timed_out:
        lines = run.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == marker:
            return Result(result.text, result.is_error, submission="".join(lines[1:]))
    return result
