"""What runs in a turn's child process (a fork of the zygote, `runner/zygote.py`): the runner
itself, exactly as `interpreter exec` runs it, shown to the caller over a pipe.

The child is its own session and process group (the caller cancels a run by signalling the
group), has the caller's environment and working directory as they were when the run was
asked for (the zygote set them up), reads nothing and prints nothing: fds 0-2 are /dev/null
and Python's stdout and stderr become warnings on the channel. SIGINT and SIGTERM end the run
as they end the CLI's: `turn.failed`, every process the model started killed, the session
written.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oiexec.api.channel import ChannelText, pipe_processor
from oiexec.core.errors import Interrupted, OiexecError
from oiexec.core.redact import redact
from oiexec.runner.child_protocol import (
    ApiRunArgs,
    Channel,
    CrashMessage,
    DoneMessage,
    ErrorMessage,
    InterruptedMessage,
    WarningMessage,
)
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult
from oiexec.runner.review import ReviewRequest

__all__ = ["ExecJob", "ReviewJob", "run_main"]


@dataclass(frozen=True)
class ExecJob:
    """One exec turn; with `diff`, the change it made is captured as `--diff` would."""

    request: ExecRequest
    diff: bool = True

    def run(self, channel: Channel) -> dict[str, Any]:
        from oiexec.runner.exec import run_exec

        with tempfile.TemporaryDirectory(prefix="oiexec-api-") as tmp:
            path = Path(tmp) / "change.patch"
            request = replace(self.request, diff=path) if self.diff else self.request
            result = run_exec(request, processor=pipe_processor(channel))
            patch = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
        return {**_run_payload(result), "diff": patch}


@dataclass(frozen=True)
class ReviewJob:
    request: ReviewRequest

    def run(self, channel: Channel) -> dict[str, Any]:
        from oiexec.runner.review import run_review

        result = run_review(
            self.request,
            lambda text: channel.send(WarningMessage(op="warning", text=redact(text))),
            processor=pipe_processor(channel),
        )
        return {
            **_run_payload(result.run),
            "exit_code": int(result.exit_code),
            "review": result.review.model_dump(mode="json") if result.review else None,
            "blocking": [f.model_dump(mode="json") for f in result.blocking],
            "fell_back": result.fell_back,
        }


def _run_payload(result: RunResult) -> dict[str, Any]:
    return {
        "exit_code": int(result.exit_code),
        "thread_id": result.thread_id,
        "final_message": redact(result.final_message) if result.final_message else None,
        "failure": result.failure,
        "limit": result.limit,
        "usage": result.usage.model_dump(),
        "cost_usd": result.cost_usd,
        "session_cost_usd": result.session_cost_usd,
        "turns": result.turns,
        "duration_s": result.duration_s,
    }


def run_main(args: ApiRunArgs, fds: list[int]) -> int:
    """The child's whole life (the zygote's `api-run`): `args["job"]` is the encoded job,
    `fds` the write end of the message pipe. Returns the exit code; the zygote exits with it
    (`os._exit`, so nothing of the zygote's runs)."""
    code = 1
    channel: Channel | None = None
    try:
        (fd,) = fds
        _isolate()
        channel = Channel(fd)
        sys.stdout = sys.stderr = ChannelText(channel)
        code = _run(args.get("job"), channel)
    except BaseException:  # a child must never fall back into the zygote's code
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            if channel is not None:
                channel.close()  # everything sent before the caller sees the end of file
        with contextlib.suppress(BaseException):
            _kill_descendants()
    return code


def _run(encoded: Any, channel: Channel) -> int:
    from oiexec.api.wire import decode_job
    from oiexec.runner.signals import interrupt_signals

    with interrupt_signals():
        try:
            job = decode_job(encoded)
            if not isinstance(job, ExecJob | ReviewJob):
                raise ValueError(f"not a job: {type(job).__name__}")
            # Redacted as a whole, as the JSONL lines are: the review's texts included.
            channel.send(DoneMessage(op="done", result=redact(json.dumps(job.run(channel)))))
        except OiexecError as exc:
            # The class names up the tree: the caller raises the first it knows (core/errors).
            names = [cls.__name__ for cls in type(exc).__mro__]
            channel.send(
                ErrorMessage(op="error", classes=names, message=redact(exc.message), hint=exc.hint)
            )
        except Interrupted as exc:
            channel.send(
                InterruptedMessage(
                    op="interrupted", message=exc.message, exit_code=int(exc.exit_code)
                )
            )
        except Exception:
            channel.send(CrashMessage(op="crash", text=redact(traceback.format_exc())))
            return 1
    return 0


def _isolate() -> None:
    # Session, parent-death signal, directory and environment: set by the zygote.
    _become_subreaper()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process


def _kill_descendants() -> None:
    """Kills whatever the run left behind, by ancestry rather than process group.

    The runner kills every command's group when the turn ends, however it ends; a signal that
    lands between a command's spawn and its registration (a window of a few milliseconds)
    escapes that. This process is a child subreaper, so even a command that daemonized is
    still below it; everything below it is killed before it exits. Linux only."""
    if not sys.platform.startswith("linux"):
        return
    for _ in range(10):
        found = _descendants(os.getpid())
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass  # reaped; orphans that reach us are ours to reap
        time.sleep(0.01)


def _descendants(root: int) -> list[int]:
    """Live (not zombie) processes below `root`, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = list(parents.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, ()))
    return found


def _become_subreaper() -> None:
    """Orphans of the run's commands are re-parented here, not to init, so
    `_kill_descendants` finds them. Linux only; elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        pr_set_child_subreaper = 36
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1)
