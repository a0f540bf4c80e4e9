"""New, resumed or forked threads: which rollout to write, what history to start from, and
the sink that mirrors the run's events into it."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from oiexec import __version__
from oiexec.config.loader import LoadedConfig
from oiexec.core.errors import SessionError
from oiexec.core.events import ThreadEvent, Usage
from oiexec.core.protocols import SessionStore
from oiexec.core.types import HistoryItem
from oiexec.runner.request import ExecRequest


@dataclass
class OpenedSession:
    store: SessionStore
    history: list[HistoryItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def open_session(request: ExecRequest, config: LoadedConfig, provider_id: str) -> OpenedSession:
    from oiexec.session.index import find_last, find_rollout, load_rollout
    from oiexec.session.store import NullStore, RolloutStore, fork_rollout

    home = config.home
    if request.fork_from:
        parent = find_rollout(home, request.fork_from)
        if parent is None:
            raise SessionError(f"no rollout found for thread id {request.fork_from}")
        loaded = load_rollout(parent)
        store = fork_rollout(
            home,
            parent,
            cwd=request.cwd,
            model_provider=provider_id,
            cli_version=__version__,
            base_instructions=None,
        )
        return OpenedSession(store, list(loaded.history), loaded.usage)

    if request.resume:
        target = request.resume
        path = None
        if target.session_id:
            path = find_rollout(home, target.session_id)
            if path is None:
                raise SessionError(f"no rollout found for thread id {target.session_id}")
        elif target.last:
            path = find_last(
                home, cwd=request.cwd, model_provider=provider_id, all_cwds=target.all_cwds
            )
            if path is None:
                sys.stderr.write("No previous session for this directory; starting a new one.\n")
        if path is not None:
            loaded = load_rollout(path)
            resumed: SessionStore = (
                NullStore(loaded.thread_id)
                if request.ephemeral
                else RolloutStore.open_existing(path)
            )
            return OpenedSession(resumed, list(loaded.history), loaded.usage)

    if request.ephemeral:
        return OpenedSession(NullStore())
    return OpenedSession(
        RolloutStore.create(
            home,
            cwd=request.cwd,
            model_provider=provider_id,
            cli_version=__version__,
            base_instructions=None,
        )
    )


class SessionSink:
    """Mirrors public events into the rollout, so a killed run still shows what happened."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def emit(self, event: ThreadEvent) -> None:
        self._store.append("event_msg", {"type": "thread_event", "event": event.model_dump()})

    def close(self) -> None:
        pass
