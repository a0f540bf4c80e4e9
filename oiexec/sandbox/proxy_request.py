"""The head of one request to the allowlist proxy, parsed: pure functions, no IO.

Everything here comes from a sandboxed command, i.e. is attacker-controlled. Only two forms
are accepted: `CONNECT host:port HTTP/1.x` (a tunnel, for HTTPS) and an absolute `http://`
URI (`GET http://host[:port]/path HTTP/1.x`), which is forwarded in origin form with
`Connection: close`, so one client connection carries one request to one checked host.
Anything else is a `BadRequest` with the status to answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The most a head may be (request line and headers); a longer one is refused (431).
MAX_HEAD = 16 * 1024
MAX_HEADERS = 100

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(rb"HTTP/1\.[01]")
#: Headers about the hop to the proxy, never forwarded (Connection is replaced by `close`).
_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"proxy-authorization",
    b"proxy-authenticate",
    b"te",
    b"upgrade",
}


class BadRequest(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    host: str
    port: int
    #: For CONNECT: nothing; else the head to send upstream (origin form, hop headers gone).
    forward: bytes = b""

    @property
    def tunnel(self) -> bool:
        return self.method == "CONNECT"


def _port(text: bytes) -> int:
    if not text.isdigit() or len(text) > 5 or not 0 < int(text) < 65536:
        raise BadRequest(400, "bad port")
    return int(text)


def split_authority(authority: bytes, default_port: int | None) -> tuple[str, int]:
    """`host:port` (IPv6 in brackets) into host text and port; no user info."""
    if not authority or b"@" in authority or not authority.isascii():
        raise BadRequest(400, "bad host")
    if authority.startswith(b"["):
        end = authority.find(b"]")
        if end < 0:
            raise BadRequest(400, "bad host")
        host, rest = authority[: end + 1], authority[end + 1 :]
        if rest and not rest.startswith(b":"):
            raise BadRequest(400, "bad host")
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text_ = authority.partition(b":")
        port_text = port_text_ if sep else None
    if not host or any(c <= 0x20 or c == 0x7F for c in host):
        raise BadRequest(400, "bad host")
    if port_text is None:
        if default_port is None:
            raise BadRequest(400, "CONNECT needs host:port")
        return host.decode(), default_port
    return host.decode(), _port(port_text)


def _headers(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    if len(lines) > MAX_HEADERS:
        raise BadRequest(431, "too many headers")
    out: list[tuple[bytes, bytes]] = []
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            raise BadRequest(400, "bad header line")
        value = value.strip(b" \t")
        if any((c < 0x20 and c != 0x09) or c == 0x7F for c in value):
            raise BadRequest(400, "bad header value")
        out.append((name, value))
    return out


def parse_head(head: bytes) -> ProxyRequest:
    """The request whose head (up to and including the blank line) is `head`."""
    if len(head) > MAX_HEAD:
        raise BadRequest(431, "request head too large")
    if not head.endswith(b"\r\n\r\n") and not head.endswith(b"\n\n"):
        raise BadRequest(400, "incomplete request head")
    lines = [line.removesuffix(b"\r") for line in head.split(b"\n")][:-2]
    if not lines:
        raise BadRequest(400, "empty request")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest(400, "bad request line")
    method, target, version = parts
    headers = _headers(lines[1:])
    if method == b"CONNECT":
        host, port = split_authority(target, None)
        return ProxyRequest("CONNECT", host, port)
    if not target[:7].lower() == b"http://":
        raise BadRequest(
            400,
            "only CONNECT (for https) and absolute http:// URIs go through this proxy",
        )
    rest = target[7:]
    cut = min((i for i in (rest.find(b"/"), rest.find(b"?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    if b"#" in path or any(c <= 0x20 or c >= 0x7F for c in path):
        raise BadRequest(400, "bad request target")
    host, port = split_authority(authority, 80)
    path = path if path.startswith(b"/") else b"/" + path
    kept = [(n, v) for n, v in headers if n.lower() not in _HOP and n.lower() != b"host"]
    out = [method + b" " + path + b" " + version, b"Host: " + authority]
    out += [n + b": " + v for n, v in kept]
    out += [b"Connection: close", b"", b""]
    return ProxyRequest(method.decode(), host, port, b"\r\n".join(out))


def response(status: int, reason: str, body: str) -> bytes:
    """A complete response that closes the connection."""
    data = body.encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + data
