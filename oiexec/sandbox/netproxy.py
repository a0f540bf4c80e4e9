"""The allowlist proxy: the one way out of a sandbox whose network is an allowlist.

It runs in the runner, outside the sandbox, on an asyncio loop in a thread of its own, and
listens only on a Unix socket in a private directory that the sandbox binds in read-only
(oiexec.sandbox.netbridge forwards the sandbox's 127.0.0.1 port to it). Each connection
carries one request (oiexec.sandbox.proxy_request): the host is checked against
`allowed_domains` first, then resolved here (never by the client) and connected to, so a
denied name, an IP literal not in the list, the runner's own ports or a metadata address are
unreachable unless the user allowed that very name. A denied request gets 403 with a body that
says why, and is recorded for the run's report.

Bounded: one head of at most 16 KiB read within a deadline, a fixed number of connections at
once, deadlines on resolving and connecting, an idle limit on tunnels, 64 KiB buffers with
back-pressure. `close()` ends every connection and the thread: nothing outlives the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.hostrules import HostAllowlist, is_local_address
from oiexec.sandbox.proxy_request import MAX_HEAD, BadRequest, ProxyRequest, parse_head, response

MAX_CLIENTS = 128
HEAD_TIMEOUT_S = 15.0
RESOLVE_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
#: A tunnel with no byte either way for this long is closed.
IDLE_TIMEOUT_S = 300.0
_CHUNK = 64 * 1024
#: How long, and how much, the client's unread input is drained before a refusal closes.
LINGER_S = 2.0
LINGER_BYTES = 1024 * 1024
_REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large"}
#: Denials kept one by one (each is a stderr line); past this they are only counted.
MAX_REPORTED = 200


@dataclass(frozen=True)
class Denial:
    method: str
    host: str
    port: int

    def target(self) -> str:
        bare = ":" in self.host and not self.host.startswith("[")
        host = f"[{self.host}]" if bare else self.host
        return f"{host}:{self.port}"


class NetProxy:
    """Serves `path` (a Unix socket it makes) until `close()`."""

    def __init__(self, allowlist: HostAllowlist, path: Path) -> None:
        self.path = path
        self._allowlist = allowlist
        self._denials: list[Denial] = []
        self._taken = 0
        #: Denials past MAX_REPORTED, and how many of them were taken.
        self._unreported = 0
        self._unreported_taken = 0
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(str(path))
            self._listener.listen(MAX_CLIENTS)
            self._listener.setblocking(False)
        except OSError:
            self._listener.close()
            raise
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="oiexec-netproxy", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=10)

    # -- what the sandbox asks ----------------------------------------------------------

    def take_denials(self) -> tuple[list[Denial], int]:
        """Denials recorded since the last call, and how many more were only counted."""
        with self._lock:
            new = self._denials[self._taken :]
            self._taken = len(self._denials)
            more = self._unreported - self._unreported_taken
            self._unreported_taken = self._unreported
            return new, more

    def close(self) -> None:
        if self._loop.is_closed():
            return
        stop = self._stop
        if stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    # -- the loop's thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._listener.close()
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._ready.set()
        loop = asyncio.get_running_loop()
        slots = asyncio.Semaphore(MAX_CLIENTS)
        #: Every accepted socket until its connection is done: closed at the end whatever
        #: state its task is in (a task not started yet would never close it).
        conns: set[socket.socket] = set()
        tasks: set[asyncio.Task[None]] = set()

        def accept() -> None:
            # Synchronous, so an accepted socket is in `conns` before anything can cancel.
            try:
                conn, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # out of descriptors, say: the client sees its connection refused
            conns.add(conn)
            task = asyncio.create_task(client(conn))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        async def client(conn: socket.socket) -> None:
            writer: asyncio.StreamWriter | None = None
            try:
                reader, writer = await asyncio.open_unix_connection(sock=conn, limit=MAX_HEAD)
                if slots.locked():
                    reply = response(503, "Service Unavailable", "too many connections\n")
                    await _answer(reader, writer, reply)
                    return
                async with slots:
                    await self._handle(reader, writer)
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                pass
            except asyncio.CancelledError:
                pass  # the proxy is closing: the connection ends below
            finally:
                if writer is not None:
                    await _close(writer)
                conn.close()
                conns.discard(conn)

        loop.add_reader(self._listener.fileno(), accept)
        try:
            await self._stop.wait()
        finally:
            loop.remove_reader(self._listener.fileno())
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.wait(list(tasks), timeout=5)
            for conn in list(conns):
                conn.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(_read_head(reader), HEAD_TIMEOUT_S)
            request = parse_head(head)
        except BadRequest as exc:
            reason = _REASONS.get(exc.status, "Bad Request")
            await _answer(
                reader, writer, response(exc.status, reason, f"oiexec proxy: {exc.reason}\n")
            )
            return
        pattern = self._allowlist.match(request.host)
        if pattern is None:
            denial = Denial(request.method, request.host[:255], request.port)
            with self._lock:
                if len(self._denials) < MAX_REPORTED:
                    self._denials.append(denial)
                else:
                    self._unreported += 1
            body = (
                f"oiexec network allowlist: {denial.target()} is not allowed; commands may "
                f"reach only {self._allowlist.describe()} "
                "([sandbox_workspace_write] allowed_domains)\n"
            )
            await _answer(reader, writer, response(403, "Forbidden", body))
            return
        upstream = await _connect(request, public_only=pattern.wildcard)
        if isinstance(upstream, str):
            await _answer(
                reader, writer, response(502, "Bad Gateway", f"oiexec proxy: {upstream}\n")
            )
            return
        up_reader, up_writer = upstream
        try:
            if request.tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(request.forward)
            idle = _Idle()
            await asyncio.gather(_pipe(reader, up_writer, idle), _pipe(up_reader, writer, idle))
        finally:
            await _close(up_writer)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: bytes) -> None:
    """Send `reply` and end the connection so that the client reads it: what the client
    still sends (a body, a request not read yet) is read and dropped for a moment first,
    since closing a socket with unread input resets the connection and loses the reply."""
    writer.write(reply)
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.drain(), LINGER_S)
        if writer.can_write_eof():
            writer.write_eof()
        deadline = time.monotonic() + LINGER_S
        dropped = 0
        while dropped < LINGER_BYTES and (left := deadline - time.monotonic()) > 0:
            data = await asyncio.wait_for(reader.read(_CHUNK), left)
            if not data:
                break
            dropped += len(data)


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise BadRequest(431, "request head too large") from exc
    except asyncio.IncompleteReadError as exc:
        raise BadRequest(400, "incomplete request head") from exc


async def _connect(
    request: ProxyRequest, *, public_only: bool
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | str:
    """Resolve the (allowed) name here and connect to the first address that answers (only
    public ones when `public_only`); else why not."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(request.host.strip("[]"), request.port, type=socket.SOCK_STREAM),
            RESOLVE_TIMEOUT_S,
        )
    except (TimeoutError, OSError):
        return f"cannot resolve {request.host}"
    local = 0
    for family, _, _, _, address in infos[:8]:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        if public_only and is_local_address(str(address[0])):
            local += 1
            continue
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(str(address[0]), int(address[1]), limit=_CHUNK),
                CONNECT_TIMEOUT_S,
            )
        except (TimeoutError, OSError):
            continue
    if local:
        return (
            f"{request.host} resolves to a local address, which a name allowed by a wildcard "
            "may not reach (list the name itself to allow it)"
        )
    return f"cannot connect to {request.host}"


class _Idle:
    """When a tunnel last moved a byte, either way: a download the client waits on in
    silence is not idle."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def left(self) -> float:
        return self.last + IDLE_TIMEOUT_S - time.monotonic()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, idle: _Idle) -> None:
    """Copy until end of stream (then half-close) or until the tunnel is idle too long."""
    try:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(_CHUNK), max(idle.left(), 0.01))
            except TimeoutError:
                if idle.left() > 0:
                    continue  # the other way moved meanwhile
                raise
            if not data:
                break
            idle.last = time.monotonic()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (TimeoutError, OSError):
        writer.close()


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.TimeoutError, asyncio.CancelledError):
        await writer.drain()
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 2)
