"""Getting a batch ready before its first task starts: the process launcher started, and the
model catalog's answer for the batch's model in the on-disk memo.

A task looks its model up in the catalogs unless the memo (`catalog/cache.py`) already has
the answer; a cold look-up costs a process ~0.2 CPU-seconds and ~15 MiB. With `--jobs 8` the
first eight tasks start together, all miss the memo and all pay it (bench/batch.py: 8 jobs
on 2 cores, 16 tasks: peak PSS 425 -> 234 MiB, tree CPU 5.4 -> 4.2 s, with the look-up done
once here). The memo key is the model and provider the command line's config resolves to; a
task with a model or profile of its own looks its own up, as before.

The look-up runs in a fork of the batch process, made before it has any other thread (the
launcher's reader starts after), so the batch never carries the catalogs; in a process that
already has threads it runs in-process. Nothing here can fail a batch: a look-up that fails
leaves each task to look up (and report) for itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

from oiexec.config.loader import LoadedConfig
from oiexec.runner.launch import LaunchError, prestart

__all__ = ["warm_up"]

#: A look-up still going after this long is given up (its child killed); tasks look up.
LOOKUP_LIMIT_S = 30


def warm_up(config: LoadedConfig, *, jobs: int, tasks: int) -> None:
    """Starts the launcher (its imports overlap the look-up) and, when tasks will start
    together, fills the catalog memo for the batch's model."""
    child = _look_up_aside(config) if jobs >= 2 and tasks >= 2 else None
    with contextlib.suppress(LaunchError):
        prestart()  # the first task would start it; its failure is said there
    if child is not None:
        try:
            os.waitpid(child, 0)
        except BaseException:  # a signal while the batch starts: the look-up goes too
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
            raise


def _look_up_aside(config: LoadedConfig) -> int | None:
    """Forks a child that looks the model up and exits; its pid, or None when the look-up
    was done in this process (it has threads, or cannot fork)."""
    if threading.active_count() == 1:
        with contextlib.suppress(OSError):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child (measured through the memo it writes)
                code = 1
                try:
                    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
                        signal.signal(signum, signal.SIG_DFL)
                    signal.alarm(LOOKUP_LIMIT_S)
                    _look_up(config)
                    code = 0
                finally:
                    os._exit(code)
            return pid
    _look_up(config)
    return None


def _look_up(config: LoadedConfig) -> None:
    from oiexec.catalog.facts import model_facts
    from oiexec.config.providers import resolve_provider

    # Any failure: the tasks look up, and say what is wrong, themselves.
    with contextlib.suppress(Exception):
        provider_id, _provider = resolve_provider(config.settings)
        model_facts(config.settings, provider_id)
