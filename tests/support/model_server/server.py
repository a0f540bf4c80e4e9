"""The model server itself: a `ScriptedModel` served over HTTP on 127.0.0.1 from a background
thread, the provider settings that point at it, and the `model_server` pytest fixture."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from oiexec.catalog.cache import cached_lookup
from oiexec.config.settings import ProviderConfig, Settings
from tests.support.model_server.handler import Handler
from tests.support.model_server.scripted import RecordedRequest, ScriptedModel
from tests.support.model_server.steps import Step
from tests.support.model_server.wires import Wire


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: ModelServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on kept-alive or abandoned connections all the time; only
        # anything else is worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ModelServer:
    """A `ScriptedModel` served over HTTP on 127.0.0.1 from a background thread."""

    def __init__(self, model: ScriptedModel | None = None) -> None:
        self.model = model or ScriptedModel()
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ModelServer:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes stalled streams
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (no path)."""
        if self._server is None:
            raise RuntimeError("ModelServer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The provider base URL, `http://127.0.0.1:<port>/v1`."""
        return f"{self.url}/v1"

    # Delegates, so tests can talk to the server alone.
    def enqueue(self, *steps: Step) -> ModelServer:
        self.model.enqueue(*steps)
        return self

    def route(self, marker: str, *steps: Step) -> ModelServer:
        self.model.route(marker, *steps)
        return self

    def clear(self) -> int:
        return self.model.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.model.requests

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return self.model.model_requests

    @property
    def bodies(self) -> list[Any]:
        return self.model.bodies

    @property
    def remaining(self) -> int:
        return self.model.remaining

    def provider_config(self, wire_api: Wire = "responses", **overrides: Any) -> ProviderConfig:
        """A provider pointing here: no API key, small idle timeout, no retry waits needed."""
        fields: dict[str, Any] = {
            "name": "Scripted",
            "base_url": self.base_url,
            "env_key": None,
            "wire_api": wire_api,
            "stream_idle_timeout_ms": 10_000,
        }
        fields.update(overrides)
        return ProviderConfig(**fields)

    def config_args(
        self, provider_id: str = "scripted", wire_api: Wire = "responses", **fields: Any
    ) -> list[str]:
        """`-c` flags for `interpreter exec` selecting a provider that points here,
        e.g. `config_args(request_max_retries=0, env_key="SCRIPTED_KEY")`."""
        values: dict[str, Any] = {
            "name": "Scripted",
            "base_url": self.base_url,
            "wire_api": wire_api,
            "stream_idle_timeout_ms": 10_000,
        }
        values.update(fields)
        args = ["-c", f"model_provider={json.dumps(provider_id)}"]
        for key, value in values.items():
            args += ["-c", f"model_providers.{provider_id}.{key}={_toml_value(value)}"]
        return args


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


@contextmanager
def running_model_server(*steps: Step) -> Iterator[ModelServer]:
    """A started `ModelServer` with `steps` queued; stopped on exit."""
    server = ModelServer(ScriptedModel(*steps))
    with server:
        yield server


#: The model a run asks for unless a test names another (`Settings.model`'s default).
DEFAULT_MODEL = Settings.model_fields["model"].default


def remember_catalog_answer(server: ModelServer, home: Path, model: str = DEFAULT_MODEL) -> None:
    """Writes the model catalog's answer for `model` at this server into the on-disk memo
    under `home`, as a user's earlier run that day would have (oiexec.catalog.cache): every
    test has a fresh home and the server a fresh port, so without it each CLI run loaded
    the whole catalog (about a fifth of a short run's CPU). The answer is the catalog's
    own, computed in this process, whose in-memory catalog is loaded once per worker. The
    first-run path, catalog loading itself, is what tests/config/test_catalog*.py test."""
    cached_lookup(home, "scripted", server.base_url, model)


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """pytest fixture: a running `ModelServer` with an empty script (and the catalog's
    answer for it already remembered in the test's home)."""
    with running_model_server() as server:
        home = os.environ.get("OPENINTERPRETER_HOME")
        if home:
            remember_catalog_answer(server, Path(home))
        yield server
