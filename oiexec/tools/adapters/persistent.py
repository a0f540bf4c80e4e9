"""The run's long-lived shell (a shell tool with `persistent = true`): `cd`, exported
variables and functions carry over between calls, as in a terminal session.

The shell runs through the command runner's `launch` in its own `ProcessSession`; each
command is its own `command_execution` item. A small driver loop
reads one request per line (`<token> <base64 command>`), evaluates it in the shell itself
(stdin from /dev/null) and prints `\\x1f<token> <status>`; everything before that marker is
the command's output. A command that outlives its timeout takes the shell with it: the group
is killed and the next call starts a fresh shell, which the result says plainly.
"""

from __future__ import annotations

import base64
import secrets
import shlex
import time
from dataclasses import replace

from oiexec.core.context import ToolContext
from oiexec.core.policy import PreparedCommand
from oiexec.core.redact import redact
from oiexec.tools.command import (
    CommandItem,
    Declined,
    launch,
    refuse_by_rules,
    setup_failed,
    stop,
)
from oiexec.tools.framework import Runtime
from oiexec.tools.process import ProcessSession, StdinClosed
from oiexec.tools.results import CommandRun

__all__ = ["PersistentShell", "run_persistent"]

_MARK = "\x1f"
_POLL = 0.02
# The driver's own variables are prefixed so a model's commands are unlikely to clash.
_DRIVER = r"""
while IFS= read -r __oi_line; do
  __oi_token=${__oi_line%% *}
  eval "$(printf '%s' "${__oi_line#* }" | base64 -d)" </dev/null
  __oi_status=$?
  printf '\037%s %s\n' "$__oi_token" "$__oi_status"
done
"""


class PersistentShell:
    """One shell for the whole run, started on first use, killed by `close`."""

    def __init__(self, ctx: ToolContext, *, shell: str, env: dict[str, str]) -> None:
        self._ctx = ctx
        self._shell = shell
        self._env = env
        self._session: ProcessSession | None = None
        self._prepared: PreparedCommand | None = None
        self._leftover = ""
        self._pending_notes: list[str] = []
        self._closed = False

    @property
    def pid(self) -> int | None:
        return None if self._session is None else self._session.pid

    def run(self, command: str, timeout_s: float) -> CommandRun:
        if self._closed:
            return CommandRun("", None, refused="the shell session is closed")
        if self._session is None or self._session.exit_code is not None:
            if self._session is not None:
                self._stop()
                self._pending_notes.append(
                    "The shell had exited; this command runs in a new shell (working "
                    "directory and variables were reset)."
                )
            refused = self._start()
            if refused is not None:
                return CommandRun("", None, refused=refused)
        session = self._session
        assert session is not None
        notes, self._pending_notes = self._pending_notes, []
        token = secrets.token_hex(8)
        marker = f"{_MARK}{token} "
        payload = base64.b64encode(command.encode("utf-8")).decode("ascii")
        try:
            session.write(f"{token} {payload}\n", timeout=10.0)
        except StdinClosed:
            return self._died("", notes)
        remaining = self._ctx.remaining()
        limit = max(0.0, timeout_s if remaining is None else min(timeout_s, remaining))
        text = self._leftover
        self._leftover = ""
        deadline = time.monotonic() + limit
        while True:
            text += session.take_output()
            at = text.find(marker)
            end = text.find("\n", at) if at >= 0 else -1
            if end >= 0:
                status = text[at + len(marker) : end].strip()
                self._leftover = text[end + 1 :]
                code = int(status) if status.isdigit() else None
                return CommandRun(text[:at], code, notes=tuple(notes))
            if session.exit_code is not None:
                session.wait(0)
                return self._died(text + session.take_output(), notes)
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
        notes.extend(self._stop())
        notes.append(
            f"The command timed out after {limit:g} seconds and was killed, together with "
            "the shell; the next command runs in a new shell (working directory and "
            "variables were reset)."
        )
        return CommandRun(text, None, timed_out=True, notes=tuple(notes))

    def close(self) -> None:
        """Kill the shell's process group; later `run` calls are refused."""
        self._closed = True
        for note in self._stop():
            self._ctx.warn(note)

    # --- internals -----------------------------------------------------------------------

    def _start(self) -> str | None:
        argv = [self._shell, "--noprofile", "--norc", "-c", _DRIVER]
        try:
            self._session, self._prepared = launch(self._ctx, argv, env=dict(self._env))
        except Declined as exc:
            return exc.reason
        except OSError as exc:
            return f"could not start the shell: {exc}"
        self._leftover = ""
        return None

    def _stop(self) -> list[str]:
        session, prepared = self._session, self._prepared
        self._session = self._prepared = None
        if session is None or prepared is None:
            return []
        return stop(session, prepared)

    def _died(self, output: str, notes: list[str]) -> CommandRun:
        session = self._session
        code = session.exit_code if session is not None else None
        prepared = self._prepared
        notes = [*notes, *self._stop()]
        if prepared is not None and setup_failed(prepared, code):
            notes.append(f"sandbox setup failed (launcher exit status {code}); not run")
        else:
            notes.append(
                f"The shell exited (status {code}); the next command runs in a new shell "
                "(working directory and variables were reset)."
            )
        return CommandRun(output, code, notes=tuple(notes))


_KEY = "persistent_shell"


def run_persistent(ctx: ToolContext, rt: Runtime, command: str, *, timeout_s: float) -> CommandRun:
    """Run `command` in the run's persistent shell (started on first use)."""
    shell = rt.extras.get(_KEY)
    if not isinstance(shell, PersistentShell):
        shell = PersistentShell(ctx, shell=rt.shell, env={**ctx.env, **rt.env})
        rt.extras[_KEY] = shell
    argv = [rt.shell, "-c", command]
    refuse_by_rules(ctx, argv, shlex.join(argv))
    item = CommandItem.start(ctx.items, shlex.join(argv))
    run = shell.run(command, timeout_s)
    if run.refused is not None:
        item.complete(run.refused, None, "declined")
        return run
    run = replace(run, output=redact(run.output))
    item.complete(run.output, run.exit_code, "failed" if run.failed else "completed")
    return run
