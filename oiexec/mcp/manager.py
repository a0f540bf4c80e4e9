"""One run's MCP servers: started together, called from the synchronous run, stopped together.

The official SDK is asynchronous; the run is not. The manager owns one background thread with
its own asyncio loop, and every server lives in one task on it (the SDK's transports and
sessions must be entered and left in the same task). The run talks to it through
`run_coroutine_threadsafe`, so a signal in the main thread (`--timeout`, SIGTERM) still
interrupts a call. Stopping is bounded: servers get their stdin closed (the SDK escalates to
SIGTERM and SIGKILL), then every stdio server's process group is killed whatever happened,
so nothing a server spawned outlives the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from oiexec.config.mcp import McpServerConfig
from oiexec.mcp.errors import describe_failure
from oiexec.mcp.errors import leaves as _leaves
from oiexec.mcp.launch import EmptyCwd, StderrPump, http_headers, stdio_launch
from oiexec.mcp.sdk import LogRelay, client_version, list_tools

__all__ = ["McpCallError", "McpManager", "ServerStatus", "ServerTool"]

_T = TypeVar("_T")
Transport = Literal["stdio", "streamable_http"]
#: How long stopping may take in all, before the process groups are killed outright.
_STOP_WAIT_S = 3.0
#: How long a failed server's stderr gets to deliver its exit status.
_EXIT_NOTE_WAIT_S = 0.5


class McpCallError(Exception):
    """A call that produced no result (timeout, server gone, protocol error); the message
    is what the model and the `mcp_tool_call` item report."""


@dataclass(frozen=True)
class ServerTool:
    """One tool as the server listed it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    #: The tool's annotations with their MCP names (`readOnlyHint`, `destructiveHint`,
    #: `openWorldHint`, ...), None when the server sent none.
    annotations: dict[str, Any] | None


@dataclass(frozen=True)
class ServerStatus:
    """What starting one configured server gave (for the run and `interpreter mcp list`)."""

    name: str
    transport: Transport
    enabled: bool
    started: bool
    error: str | None = None
    tools: tuple[ServerTool, ...] = ()


@dataclass
class _Server:
    name: str
    config: McpServerConfig
    transport: Transport
    tools: tuple[ServerTool, ...] = ()
    error: str | None = None
    dead: str | None = None
    session: Any = None
    pump: StderrPump | None = None
    #: The last HTTP error status the server answered (the SDK reports it without one).
    http_error: str | None = None
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            transport=self.transport,
            enabled=self.config.enabled,
            started=self.error is None and self.config.enabled,
            error=self.error,
            tools=self.tools,
        )


def _transport(config: McpServerConfig) -> Transport:
    return "stdio" if config.command is not None else "streamable_http"


class McpManager:
    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        cwd: Path,
        environ: Mapping[str, str] | None = None,
        note: Callable[..., None] | None = None,
    ) -> None:
        self._servers = {
            name: _Server(name, config, _transport(config)) for name, config in servers.items()
        }
        self._cwd = cwd
        #: Where stdio servers without a `cwd` start (never the workspace, oiexec.mcp.launch).
        self._empty = EmptyCwd()
        self._environ = dict(os.environ if environ is None else environ)
        self._note = note or (lambda _event, **_fields: None)
        self._log_relay = LogRelay(self._note)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- the run's side ------------------------------------------------------------------

    def start(self) -> list[ServerStatus]:
        """Starts every enabled server in parallel, each within its startup timeout, and
        reports each configured one (failures are reported, never raised)."""
        enabled = [server for server in self._servers.values() if server.config.enabled]
        self._log_relay.install()
        if enabled:
            self._submit(self._start_all(enabled)).result()
        for server in enabled:
            if server.error is not None:
                self._note("mcp.server.failed", server=server.name, error=server.error)
            else:
                self._note("mcp.server.started", server=server.name, tools=len(server.tools))
        return [server.status() for server in self._servers.values()]

    def call(self, server: str, tool: str, arguments: dict[str, Any] | None, timeout: float) -> Any:
        """Calls `tool` and returns its `CallToolResult`; raises `McpCallError` with the
        reason when there is no result."""

        async def make(session: Any) -> Any:
            return await session.call_tool(tool, arguments)

        return self.run(server, make, timeout, method="tools/call")

    def run(
        self,
        server: str,
        make: Callable[[Any], Coroutine[Any, Any, _T]],
        timeout: float,
        *,
        method: str = "request",
    ) -> _T:
        """Runs one request (`make` on the server's session) within `timeout`; raises
        `McpCallError` when there is no result, `method` naming the request in a timeout."""
        entry = self._servers[server]
        if entry.session is None:
            reason = entry.dead or entry.error or "it is not running"
            raise McpCallError(f"MCP server `{server}` is not available: {reason}")
        future = self._submit(self._request(entry, make, timeout, method))
        try:
            return future.result()
        except BaseException:
            future.cancel()  # interrupted (signal): the request must not run on unattended
            raise

    def close(self) -> None:
        """Stops every server; bounded, idempotent, safe from any outcome of the run."""
        if self._closed:
            return
        self._closed = True
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(Exception):
                self._submit(self._stop_all()).result(timeout=_STOP_WAIT_S + 1)
        for server in self._servers.values():
            self._kill_group(server)
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=2)
            if not self._thread.is_alive():
                loop.close()
        for server in self._servers.values():
            if server.pump is not None:
                server.pump.join(timeout=0.5)
        self._empty.remove()
        self._log_relay.remove()

    # -- the loop thread -----------------------------------------------------------------

    def _submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="oiexec-mcp", daemon=True
            )
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _start_all(self, servers: list[_Server]) -> None:
        readies = []
        for server in servers:
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            server.stop = asyncio.Event()
            server.task = asyncio.create_task(self._serve(server, ready))
            readies.append(ready)
        await asyncio.gather(*readies, return_exceptions=True)

    async def _stop_all(self) -> None:
        tasks = [server.task for server in self._servers.values() if server.task is not None]
        for server in self._servers.values():
            if server.stop is not None:
                server.stop.set()
            if server.task is not None and server.session is None:
                # Still starting (the run was interrupted): nothing to wind down politely,
                # and the SDK's own shutdown would wait for a server that never answered.
                self._kill_group(server)
                server.task.cancel()
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=_STOP_WAIT_S)
            for task in pending:
                task.cancel()

    async def _serve(self, server: _Server, ready: asyncio.Future[None]) -> None:
        """The server's whole life, in one task: connect, initialize, list its tools, wait
        for the run to end, disconnect."""
        import anyio

        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    session = await stack.enter_async_context(self._session(server))
                    with anyio.fail_after(server.config.startup_timeout):
                        await session.initialize()
                        listed = await list_tools(session)
                except Exception as exc:
                    # Reported now, so the run need not wait for this server's shutdown; its
                    # process group is killed so that shutdown is immediate.
                    server.error = await self._reason(server, exc, starting=True)
                    self._kill_group(server)
                    ready.set_result(None)
                    return
                server.tools = self._filter(server, listed)
                server.session = session
                ready.set_result(None)
                assert server.stop is not None
                await server.stop.wait()
        except BaseException as exc:  # reported, never raised
            if not ready.done():
                server.error = await self._reason(server, exc, starting=True)
                ready.set_result(None)
            elif server.dead is None and not (server.stop is not None and server.stop.is_set()):
                server.dead = await self._reason(server, exc, starting=False)
                self._note("mcp.server.stopped", server=server.name, reason=server.dead)
        finally:
            server.session = None

    @contextlib.asynccontextmanager
    async def _session(self, server: _Server) -> AsyncIterator[Any]:
        import mcp_types
        from mcp.client.session import ClientRequestContext, ClientSession

        async def cancel_elicitation(
            context: ClientRequestContext, params: mcp_types.ElicitRequestParams
        ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
            # Nobody is there to answer under exec's approval `never`: Codex cancels.
            return mcp_types.ElicitResult(action="cancel")

        info = mcp_types.Implementation(name="oiexec", version=client_version())
        async with (
            self._streams(server) as (read, write),
            ClientSession(
                read, write, elicitation_callback=cancel_elicitation, client_info=info
            ) as session,
        ):
            yield session

    @contextlib.asynccontextmanager
    async def _streams(self, server: _Server) -> AsyncIterator[Any]:
        config = server.config
        if server.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            name = server.name
            pump = StderrPump(lambda line: self._note("mcp.server.stderr", server=name, line=line))
            argv, env, cwd = stdio_launch(config, self._environ, self._cwd, self._empty, pump.mark)
            # Only a launched server has a pump: one refused before launch has no exit
            # status worth waiting for.
            server.pump = pump
            errlog = server.pump.open()
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            try:
                async with stdio_client(params, errlog=errlog) as streams:
                    server.pump.release()
                    yield streams
            finally:
                server.pump.release()
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert config.url is not None
            headers = http_headers(config, self._environ)
            timeout = httpx2.Timeout(30.0, read=300.0)

            async def remember_status(response: httpx2.Response) -> None:
                if response.status_code >= 400:
                    server.http_error = f"HTTP {response.status_code} {response.reason_phrase}"

            hooks = {"response": [remember_status]}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as client,
                streamable_http_client(config.url, http_client=client) as streams,
            ):
                yield streams

    async def _request(
        self,
        server: _Server,
        make: Callable[[Any], Coroutine[Any, Any, _T]],
        timeout: float,
        method: str,
    ) -> _T:
        import anyio
        from mcp.shared.exceptions import MCPError

        session = server.session
        if session is None:
            raise McpCallError(f"MCP server `{server.name}` is not available: {server.dead}")
        try:
            with anyio.fail_after(timeout):
                result: _T = await make(session)
                return result
        except TimeoutError:
            raise McpCallError(f"timed out awaiting {method} after {_seconds(timeout)}") from None
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED:
                reason = await self._reason(server, exc, starting=False)
                server.dead = server.dead or reason
                server.session = None
                raise McpCallError(f"MCP server `{server.name}` {reason}") from None
            raise McpCallError(exc.error.message) from None
        except Exception as exc:
            raise McpCallError(await self._reason(server, exc, starting=False)) from None

    async def _reason(self, server: _Server, exc: BaseException, *, starting: bool) -> str:
        """Why the server failed, in words a user can act on."""
        pump = server.pump
        timed_out = any(isinstance(leaf, TimeoutError) for leaf in _leaves(exc))
        if pump is not None and server.transport == "stdio" and not timed_out:
            # The exit status arrives on stderr just after the pipe closes.
            await asyncio.get_running_loop().run_in_executor(
                None, pump.exited.wait, _EXIT_NOTE_WAIT_S
            )
        # At startup the server's last words say what is wrong; mid-run they are in the run
        # log, and the model gets the short reason.
        return describe_failure(
            exc,
            timeout=server.config.startup_timeout if starting else None,
            exit_code=pump.exit_code if pump is not None else None,
            stderr=list(pump.tail) if pump is not None and starting else [],
            http_error=server.http_error,
            url=server.config.url,
        )

    def _filter(self, server: _Server, listed: list[Any]) -> tuple[ServerTool, ...]:
        enabled = server.config.enabled_tools
        disabled = set(server.config.disabled_tools)
        kept = []
        for tool in listed:
            if (enabled is not None and tool.name not in enabled) or tool.name in disabled:
                continue
            annotations = (
                tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
                if tool.annotations is not None
                else None
            )
            kept.append(
                ServerTool(
                    server=server.name,
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema),
                    annotations=annotations,
                )
            )
        return tuple(kept)

    @staticmethod
    def _kill_group(server: _Server) -> None:
        pump = server.pump
        # A server that died early in a long run may have had its id handed to an unrelated
        # process since: that process's group is never ours to kill.
        if pump is None or pump.pid is None or not pump.group_is_ours():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pump.pid, signal.SIGKILL)


_CONNECTION_CLOSED = -32000


def _seconds(value: float) -> str:
    """A duration as Rust's `Debug` prints it (`300s`, `1.5s`, `500ms`), the way Codex's
    timeout message shows it."""
    if value >= 1:
        return f"{value:.9f}".rstrip("0").rstrip(".") + "s"
    return f"{value * 1000:.6f}".rstrip("0").rstrip(".") + "ms"
