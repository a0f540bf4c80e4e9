"""Getting a batch ready before its first task starts: the process launcher started, and the
model catalog's answer for the batch's model in the on-disk memo.

A task looks its model up in the catalogs unless the memo (`catalog/cache.py`) already has
the answer; a cold look-up costs a process ~0.2 CPU-seconds and ~15 MiB. With `--jobs 8` the
first eight tasks start together, all miss the memo and all pay it (bench/batch.py: 8 jobs
on 2 cores, 16 tasks: peak PSS 425 -> 234 MiB, tree CPU 5.4 -> 4.2 s, with the look-up done
once here). The memo key is the model and provider the command line's config resolves to; a
task with a model or profile of its own looks its own up, as before. Nothing here can fail a
batch: a look-up that fails leaves each task to look up (and report) for itself.
"""

from __future__ import annotations

import contextlib

from oiexec.config.loader import LoadedConfig
from oiexec.runner.launch import LaunchError, prestart

__all__ = ["warm_up"]


def warm_up(config: LoadedConfig, *, jobs: int, tasks: int) -> None:
    """Starts the launcher (its imports overlap the look-up below) and, when tasks will
    start together, fills the catalog memo for the batch's model."""
    with contextlib.suppress(LaunchError):
        prestart()  # the first task would start it; its failure is said there
    if jobs < 2 or tasks < 2:
        return  # one task at a time: the first task's look-up fills the memo for the rest
    from oiexec.catalog.facts import model_facts
    from oiexec.config.providers import resolve_provider

    # Any failure: the tasks look up, and say what is wrong, themselves.
    with contextlib.suppress(Exception):
        provider_id, _provider = resolve_provider(config.settings)
        model_facts(config.settings, provider_id)
