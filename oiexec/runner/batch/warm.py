"""Getting a batch ready before its first task starts: the process launcher started, and the
model catalog's answer for the batch's model in the on-disk memo.

A task looks its model up in the catalogs unless the memo (`catalog/cache.py`) already has
the answer; a cold look-up costs a process ~0.2 CPU-seconds and ~15 MiB. With `--jobs 8` the
first eight tasks start together, all miss the memo and all pay it (bench/batch.py: 8 jobs
on 2 cores, 16 tasks: peak PSS 425 -> 234 MiB, tree CPU 5.4 -> 4.2 s, with the look-up done
once here). The memo key is the model and provider the command line's config resolves to; a
task with a model or profile of its own looks its own up, as before.

The look-up is the catalog probe every run uses (`catalog/probe.py`: a short-lived process
of its own), started before the launcher so the two overlap; the batch process never carries
the catalogs. Nothing here can fail a batch: a look-up that fails leaves each task to look up
(and report) for itself.
"""

from __future__ import annotations

import contextlib

from oiexec.config.loader import LoadedConfig
from oiexec.runner.launch import LaunchError, prestart

__all__ = ["warm_up"]


def warm_up(config: LoadedConfig, *, jobs: int, tasks: int) -> None:
    """Starts the launcher (its imports overlap the look-up) and, when tasks will start
    together, fills the catalog memo for the batch's model."""
    pending = None
    if jobs >= 2 and tasks >= 2:
        # Any failure: the tasks look up, and say what is wrong, themselves.
        with contextlib.suppress(Exception):
            from oiexec.catalog.facts import PendingFacts
            from oiexec.config.providers import resolve_provider

            provider_id, _provider = resolve_provider(config.settings)
            pending = PendingFacts(config.settings, provider_id)
            pending.begin()
    try:
        with contextlib.suppress(LaunchError):
            # Already started by the batch command first thing (cli/batch_cmd.py); this
            # starts it again only if it is not alive. Its failure is said by the first task.
            prestart()
    except BaseException:  # a signal while the batch starts: the look-up goes too
        if pending is not None:
            pending.cancel()
        raise
    if pending is not None:
        with contextlib.suppress(Exception):  # waited for, and remembered in the memo
            pending.result()
