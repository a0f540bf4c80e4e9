"""`[sandbox_workspace_write] allowed_domains`: which host names sandboxed commands may reach
through the runner's network proxy (oiexec.sandbox.netproxy).

A pattern is a host name (`pypi.org`, only that host), `*.` and a name (`*.npmjs.org`, every
subdomain of it, not the name itself) or an IP address (only that literal). Names are compared
lower-cased without a trailing dot. Nothing else is a pattern: no scheme, port, path, lone `*`
or wildcard inside a name, so a typo cannot silently allow more (or less) than meant.

A name allowed only through a wildcard must resolve to a public address: whoever controls a
subdomain's DNS could otherwise point it at the runner's machine or the metadata service.
A name listed exactly (`localhost`, an internal mirror) may resolve anywhere.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

#: One DNS label (letters, digits, hyphens, and `_` as some service names have).
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253


def _ip(text: str) -> str | None:
    """The canonical text of an IP literal (`[::1]` or `::1`), else None."""
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(inner))
    except ValueError:
        return None


def normalize_host(host: str) -> str | None:
    """`host` as patterns are compared with: lower case, no trailing dot, IP literals in
    canonical form; None when it is no valid host name or address."""
    ip = _ip(host)
    if ip is not None:
        return ip
    name = host.lower()
    if name.endswith("."):
        name = name[:-1]
    if not name or len(name) > _MAX_NAME or not name.isascii():
        return None
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return None
    return name


@dataclass(frozen=True)
class HostPattern:
    #: The host (or, for a wildcard, the parent name) in normal form.
    name: str
    wildcard: bool = False

    def matches(self, host: str) -> bool:
        """`host` must be in normal form (`normalize_host`)."""
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name

    def __str__(self) -> str:
        return f"*.{self.name}" if self.wildcard else self.name


def parse_pattern(text: str) -> HostPattern:
    """One `allowed_domains` entry; `ValueError` saying what is wrong with it."""
    raw = text.strip()
    if not raw:
        raise ValueError("an empty entry allows nothing: remove it")
    if "://" in raw or "/" in raw:
        raise ValueError(f"`{text}`: a host name, e.g. pypi.org, without scheme or path")
    wildcard = raw.startswith("*.")
    rest = raw[2:] if wildcard else raw
    if "*" in rest:
        raise ValueError(
            f"`{text}`: `*` may only start an entry, as `*.example.com` (every subdomain); "
            "to allow every host, set network_access = true without allowed_domains"
        )
    if _ip(rest) is None and ":" in rest:
        raise ValueError(f"`{text}`: a host name without a port (every port of it is allowed)")
    if wildcard and _ip(rest) is not None:
        raise ValueError(f"`{text}`: `*.` goes with a domain name, not an IP address")
    name = normalize_host(rest)
    if name is None:
        raise ValueError(f"`{text}`: not a valid host name or IP address")
    return HostPattern(name, wildcard)


def is_local_address(address: str) -> bool:
    """Loopback, link-local (cloud metadata), private, unspecified, multicast or reserved,
    an IPv4-mapped IPv6 address judged as its IPv4 one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True  # not an address we know how to judge: treat it as local
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_unspecified
        or ip.is_multicast
        or ip.is_reserved
    )


class HostAllowlist:
    """The parsed `allowed_domains`."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = tuple(parse_pattern(p) for p in patterns)

    def allows(self, host: str) -> bool:
        return self.match(host) is not None

    def match(self, host: str) -> HostPattern | None:
        """The pattern that allows `host` (an exact one before a wildcard), or None."""
        name = normalize_host(host)
        if name is None:
            return None
        found = [p for p in self.patterns if p.matches(name)]
        return min(found, key=lambda p: p.wildcard, default=None)

    def describe(self) -> str:
        return ", ".join(str(p) for p in self.patterns)
