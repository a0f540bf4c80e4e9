"""The allowlist proxy in-process: host patterns, the request-head parser (untrusted input,
property-based), and the proxy itself on a real Unix socket: malformed requests are answered
or closed within bounds and never stop it, denied hosts get 403 and are recorded, an allowed
plain-HTTP request is forwarded in origin form with the proxy's own headers removed."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oiexec.core.errors import ConfigError
from oiexec.core.hostrules import HostAllowlist, is_local_address, parse_pattern
from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import netproxy
from oiexec.sandbox.netgate import refuse_unisolated
from oiexec.sandbox.netproxy import NetProxy
from oiexec.sandbox.proxy_request import MAX_HEAD, BadRequest, parse_head


@pytest.mark.parametrize(
    ("pattern", "host", "allowed"),
    [
        ("pypi.org", "pypi.org", True),
        ("pypi.org", "PyPI.ORG.", True),
        ("pypi.org", "files.pypi.org", False),
        ("pypi.org", "pypi.org.evil.com", False),
        ("*.npmjs.org", "registry.npmjs.org", True),
        ("*.npmjs.org", "a.b.NPMJS.org", True),
        ("*.npmjs.org", "npmjs.org", False),
        ("*.npmjs.org", "evilnpmjs.org", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("localhost", "127.0.0.1", False),
        ("::1", "[::1]", True),
        ("localhost", "localhost\n", False),
    ],
)
def test_host_patterns(pattern: str, host: str, allowed: bool) -> None:
    assert HostAllowlist((pattern,)).allows(host) is allowed


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("https://pypi.org", "without scheme or path"),
        ("pypi.org/simple", "without scheme or path"),
        ("*", "`*` may only start an entry"),
        ("a.*.org", "`*` may only start an entry"),
        ("pypi.org:443", "without a port"),
        ("*.10.0.0.1", "not an IP address"),
        ("", "an empty entry"),
        ("bad_host name", "not a valid host name"),
    ],
)
def test_bad_patterns_say_what_is_wrong(pattern: str, says: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_pattern(pattern)
    assert says in str(info.value)


def test_connect_and_absolute_uri_heads() -> None:
    tunnel = parse_head(b"CONNECT Registry.npmjs.org:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (tunnel.method, tunnel.host, tunnel.port, tunnel.tunnel) == (
        "CONNECT",
        "Registry.npmjs.org",
        443,
        True,
    )
    plain = parse_head(
        b"GET http://pypi.org/simple/?q=1 HTTP/1.1\r\nHost: evil.com\r\n"
        b"Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
    )
    assert (plain.host, plain.port) == ("pypi.org", 80)
    assert plain.forward == (
        b"GET /simple/?q=1 HTTP/1.1\r\nHost: pypi.org\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    assert parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").host == "[::1]"


@pytest.mark.parametrize(
    "head",
    [
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org:0 HTTP/1.1\r\n\r\n",
        b"GET http://user@evil.com/ HTTP/1.1\r\n\r\n",
        b"GET http://pypi.org/ HTTP/2\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\nBad Header: x\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\nX: a\x00b\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\n",
    ],
)
def test_malformed_heads_are_refused(head: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_head(head)


@given(st.binary(max_size=600))
@example(b"GET http://a/ HTTP/1.1\r\nX: \r\n\r\n")
@example(b"CONNECT [:1 HTTP/1.1\r\n\r\n")
def test_any_head_parses_or_is_refused(data: bytes) -> None:
    for head in (data, data + b"\r\n\r\n", b"GET http://" + data + b" HTTP/1.1\r\n\r\n"):
        try:
            request = parse_head(head)
        except BadRequest as exc:
            assert exc.status in (400, 431)
            continue
        assert request.host and not any(c.isspace() for c in request.host)
        assert 0 < request.port < 65536
        if not request.tunnel:
            # One request, one Host, closed after it: nothing of the client's smuggled in.
            lines = request.forward.split(b"\r\n")
            assert request.forward.endswith(b"\r\nConnection: close\r\n\r\n")
            assert sum(ln.lower().startswith(b"host:") for ln in lines) == 1
            assert not any(b"\n" in ln or b"\r" in ln for ln in lines)


# -- the proxy on a real socket ------------------------------------------------------------


@pytest.fixture
def proxy() -> Iterator[NetProxy]:
    where = Path(tempfile.mkdtemp(prefix="oi-np-", dir="/tmp"))
    server = NetProxy(HostAllowlist(("localhost",)), where / "p.sock")
    yield server
    server.close()
    shutil.rmtree(where, ignore_errors=True)


def _exchange(proxy: NetProxy, data: bytes, *, timeout: float = 10) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(proxy.path))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_denied_host_gets_403_and_is_recorded(proxy: NetProxy) -> None:
    answer = _exchange(proxy, b"CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"169.254.169.254:80 is not allowed; commands may reach only localhost" in answer
    [denial], more = proxy.take_denials()
    assert (denial.method, denial.host, denial.port) == ("CONNECT", "169.254.169.254", 80)
    assert more == 0
    assert proxy.take_denials() == ([], 0)


def test_denials_past_the_limit_are_counted_not_kept(
    proxy: NetProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(netproxy, "MAX_REPORTED", 2)
    for n in range(5):
        _exchange(proxy, f"CONNECT h{n}.example:443 HTTP/1.1\r\n\r\n".encode())
    denials, more = proxy.take_denials()
    assert [d.host for d in denials] == ["h0.example", "h1.example"]
    assert more == 3


def test_an_oversized_head_is_refused_at_the_limit(proxy: NetProxy) -> None:
    head = b"GET http://localhost/ HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD + 10) + b"\r\n\r\n"
    assert _exchange(proxy, head).startswith(b"HTTP/1.1 431 ")


def test_a_silent_client_is_dropped(proxy: NetProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netproxy, "HEAD_TIMEOUT_S", 0.3)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(proxy.path))
        sock.sendall(b"GET http://localhost/ HTTP/1.1\r\n")  # and never the blank line
        started = time.monotonic()
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 ") or answer == b""
    assert time.monotonic() - started < 5


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=2000))
@example(b"\r\n\r\n")
@example(b"CONNECT :80 HTTP/1.1\r\n\r\n")
def test_malformed_requests_never_stop_the_proxy(proxy: NetProxy, data: bytes) -> None:
    answer = _exchange(proxy, data)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 ")
    # Still serving.
    assert _exchange(proxy, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n").startswith(
        b"HTTP/1.1 403 "
    )


def test_an_allowed_request_is_forwarded_in_origin_form(proxy: NetProxy) -> None:
    seen: list[bytes] = []
    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(1)
    port = upstream.getsockname()[1]

    def serve() -> None:
        conn, _ = upstream.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            seen.append(data)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    head = (
        f"GET http://LOCALHOST:{port}/x HTTP/1.1\r\nHost: other\r\n"
        "Proxy-Authorization: Basic eA==\r\n\r\n"
    ).encode()
    answer = _exchange(proxy, head)
    thread.join(10)
    upstream.close()
    assert answer.endswith(b"\r\n\r\nok"), answer
    assert seen == [
        f"GET /x HTTP/1.1\r\nHost: LOCALHOST:{port}\r\nConnection: close\r\n\r\n".encode()
    ]


def test_close_ends_open_tunnels(proxy: NetProxy) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(proxy.path))
        sock.sendall(b"GET http://localhost:1/ HTTP/1.1\r\n")  # waiting for the head
        started = time.monotonic()
        proxy.close()
        try:
            left = sock.recv(100)
        except ConnectionResetError:
            left = b""
        assert left == b""  # closed, not left waiting for the head
        assert time.monotonic() - started < 8
    assert not proxy.path.exists()


# -- what the bwrap backend adds for an allowlist -------------------------------------------


def _allowlist_policy(cwd: Path) -> SandboxPolicy:
    return SandboxPolicy(
        mode="workspace-write",
        cwd=cwd,
        network_access=True,
        allowed_domains=("pypi.org",),
    )


def test_bwrap_keeps_its_own_network_and_binds_only_the_proxy_socket(tmp_path: Path) -> None:
    from oiexec.sandbox.bwrap import BwrapFeatures, BwrapSandbox

    sandbox = BwrapSandbox(_allowlist_policy(tmp_path), BwrapFeatures(path="/usr/bin/bwrap"), {})
    try:
        prepared = sandbox.prepare(["echo", "hi"], cwd=tmp_path, env={})
        argv = prepared.argv
        assert "--unshare-net" in argv
        gate = sandbox.net
        assert gate is not None
        binds = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind"]
        [socket_dir] = [b for b in binds if Path(b).name.startswith("oiexec-net-")]
        assert (Path(socket_dir) / "proxy.sock").is_socket()
        assert oct(Path(socket_dir).stat().st_mode & 0o777) == "0o700"
        command = argv[argv.index("--chdir") + 3 :]
        assert command[1:4] == ["-I", "-S", "-c"]
        assert command[5:] == [str(Path(socket_dir) / "proxy.sock"), "--", "echo", "hi"]
        assert prepared.after() == []
    finally:
        sandbox.close()
    assert not Path(socket_dir).exists()


@pytest.mark.parametrize(
    ("backend", "netns", "refused"),
    [
        ("bwrap", True, False),
        ("bwrap", False, True),
        ("landlock", False, True),
        ("seatbelt", False, True),
        ("unavailable", True, False),  # every command is refused anyway
    ],
)
def test_backends_that_cannot_isolate_refuse_the_allowlist(
    tmp_path: Path, backend: str, netns: bool, refused: bool
) -> None:
    policy = _allowlist_policy(tmp_path)
    if not refused:
        refuse_unisolated(policy, backend, netns)
        return
    with pytest.raises(ConfigError) as caught:
        refuse_unisolated(policy, backend, netns)
    assert caught.value.message.startswith(
        "[sandbox_workspace_write] allowed_domains cannot be enforced: "
    )


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1", True),
        ("169.254.169.254", True),
        ("10.1.2.3", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("fe80::1%eth0", True),
        ("0.0.0.0", True),
        ("151.101.0.223", False),
        ("2a04:4e42::223", False),
    ],
)
def test_local_addresses(address: str, local: bool) -> None:
    assert is_local_address(address) is local


def test_a_wildcard_name_may_not_resolve_to_a_local_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whoever controls a subdomain's DNS must not reach the runner's machine through it;
    a name listed exactly may (here `localhost`). DNS answers are faked: no resolver here
    serves such names."""
    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(4)
    upstream.settimeout(5)
    port = upstream.getsockname()[1]
    real = socket.getaddrinfo

    def fake(host: str, *args: object, **kwargs: object) -> object:
        if host.endswith(".example.com"):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    where = Path(tempfile.mkdtemp(prefix="oi-np-", dir="/tmp"))
    server = NetProxy(HostAllowlist(("*.example.com", "exact.example.com")), where / "p.sock")
    try:
        answer = _exchange(server, f"CONNECT sub.example.com:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 502 ")
        assert b"sub.example.com resolves to a local address" in answer
        upstream.setblocking(False)
        with pytest.raises(BlockingIOError):
            upstream.accept()  # nothing was connected
        upstream.settimeout(5)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(str(server.path))
            client.sendall(f"CONNECT exact.example.com:{port} HTTP/1.1\r\n\r\n".encode())
            assert client.recv(100).startswith(b"HTTP/1.1 200 Connection established")
            conn, _ = upstream.accept()  # the tunnel's far end
            conn.close()
    finally:
        server.close()
        upstream.close()
        shutil.rmtree(where, ignore_errors=True)


def test_connections_past_the_limit_get_503(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netproxy, "MAX_CLIENTS", 1)
    where = Path(tempfile.mkdtemp(prefix="oi-np-", dir="/tmp"))
    server = NetProxy(HostAllowlist(("localhost",)), where / "p.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as holder:
            holder.settimeout(10)
            holder.connect(str(server.path))
            holder.sendall(b"GET http://localhost/ HTTP/1.1\r\n")  # holds the one slot
            deadline = time.monotonic() + 10
            answer = b""
            while time.monotonic() < deadline:  # until the holder's task has its slot
                answer = _exchange(server, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
                if answer.startswith(b"HTTP/1.1 503 "):
                    break
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable"), answer
    finally:
        server.close()
        shutil.rmtree(where, ignore_errors=True)


def test_a_refused_request_with_a_body_still_reads_its_403(proxy: NetProxy) -> None:
    """The body is never read for a refusal; closing over it would reset the connection and
    the client would see an error instead of the reason."""
    body = b"x" * 100_000
    head = f"POST http://evil.example/upload HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
    answer = _exchange(proxy, head.encode() + body)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer[:100]
