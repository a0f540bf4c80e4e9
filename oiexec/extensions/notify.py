"""`notify = ["cmd", "arg", ...]`: a program told that the agent's turn is complete.

As in Codex, it runs once per completed turn (never after a failed or interrupted one: Codex
fires it from the end of a turn that finished, and a failed run already has its exit code and
`turn.failed`), with Codex's JSON payload appended as the last argument:

    {"type": "agent-turn-complete", "thread-id": ..., "turn-id": ..., "cwd": ...,
     "input-messages": [...], "last-assistant-message": ...}

It runs outside the sandbox with the user's environment (less credentials config does not
pass in `notify_env_vars`, and PATH entries sandboxed commands could write), its output
discarded, in a session of its own; a program lying where sandboxed commands can write is
refused (oiexec.extensions.outside), and the one found is started by its absolute path.
oiexec waits for it a bounded time (so a quick notifier has finished when the run exits),
then leaves it running; nothing it does changes the run's exit code.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from oiexec.core import programs
from oiexec.extensions.outside import argv_refusal, outside_env

__all__ = ["NOTIFY_WAIT_S", "notify_payload", "notify_refusal", "run_notify"]

#: How long the run waits for the notify program before leaving it to finish alone.
NOTIFY_WAIT_S = 10.0


def notify_payload(
    *,
    thread_id: str,
    turn_id: str,
    cwd: Path,
    input_messages: Sequence[str],
    last_assistant_message: str | None,
) -> dict[str, Any]:
    return {
        "type": "agent-turn-complete",
        "thread-id": thread_id,
        "turn-id": turn_id,
        "cwd": str(cwd),
        "input-messages": list(input_messages),
        "last-assistant-message": last_assistant_message,
    }


def notify_refusal(argv: Sequence[str], cwd: Path, path_value: str) -> str | None:
    """Why the notify program may not run outside the sandbox, or None."""
    if not argv or not argv[0]:
        return None
    return argv_refusal(argv, cwd, path_value)


def run_notify(
    argv: Sequence[str],
    payload: Mapping[str, Any],
    *,
    cwd: Path,
    env: Mapping[str, str],
    warn: Callable[[str], None],
    note: Callable[..., None],
    wait_s: float = NOTIFY_WAIT_S,
    passed_env: Sequence[str] = (),
) -> None:
    """Runs the notify program; every problem is a warning, never an exception."""
    if not argv or not argv[0]:
        return
    path_value = env.get("PATH", "")
    refusal = notify_refusal(argv, cwd, path_value)
    if refusal is not None:
        warn(f"notify command `{argv[0]}` not run: {refusal}")
        note("notify.failed", command=list(argv), error=refusal)
        return
    # Started by the path found now, never looked up again (a missing one fails below).
    program = programs.judge_program(argv[0], cwd=cwd, path_value=path_value)[0] or argv[0]
    arguments = [program, *argv[1:], json.dumps(payload, ensure_ascii=False)]
    try:
        process = subprocess.Popen(
            arguments,
            cwd=cwd,
            env=outside_env(env, passed_env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        warn(f"notify command `{argv[0]}` could not start: {exc.strerror or exc}")
        note("notify.failed", command=list(argv), error=str(exc))
        return
    try:
        code = process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        note("notify.detached", command=list(argv), pid=process.pid, waited_s=wait_s)
        return
    note("notify.finished", command=list(argv), exit_code=code)
    if code != 0:
        warn(f"notify command `{argv[0]}` exited with status {code}")
