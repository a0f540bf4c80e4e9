"""Why a server failed, worded for the person who configured it."""

from __future__ import annotations

__all__ = ["describe_failure", "leaves"]


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, the way anyio's task groups wrap them."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def _http_status(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        phrase = getattr(response, "reason_phrase", "") or ""
        return f"HTTP {status} {phrase}".rstrip()
    return None


def _unreachable(exc: BaseException) -> bool:
    """A connection that never got an answer (refused, unknown host, TLS)."""
    import httpx2

    return isinstance(exc, httpx2.TransportError) or (
        isinstance(exc, OSError) and not isinstance(exc, TimeoutError)
    )


def _oserror_text(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).strip() or type(exc).__name__


def describe_failure(
    exc: BaseException,
    *,
    timeout: float | None,
    exit_code: int | None,
    stderr: list[str],
    http_error: str | None = None,
    url: str | None = None,
) -> str:
    """One line (plus the server's last stderr lines): the process exit, the HTTP status,
    the startup timeout, or the error itself, in that order of usefulness."""
    from oiexec.mcp.launch import LaunchError

    found = leaves(exc)
    tail = "; stderr: " + " | ".join(line.strip() for line in stderr[-5:] if line.strip())
    tail = tail if any(line.strip() for line in stderr) else ""
    for leaf in found:
        if isinstance(leaf, LaunchError):
            return str(leaf)
    if exit_code is not None:
        return f"exited with code {exit_code}{tail}"
    for leaf in found:
        status = _http_status(leaf) or http_error
        if status is not None:
            return f"the server answered {status}"
    for leaf in found:
        if isinstance(leaf, TimeoutError) and timeout is not None:
            return f"timed out after {timeout:g} s (startup_timeout_sec){tail}"
    for leaf in found:
        if url is not None and _unreachable(leaf):
            return f"cannot reach {url}: {_oserror_text(leaf)}"
    for leaf in found:
        if isinstance(leaf, OSError) and not isinstance(leaf, TimeoutError):
            return f"{_oserror_text(leaf)}{tail}"
    leaf = found[0] if found else exc
    text = str(leaf).strip() or type(leaf).__name__
    return f"{text}{tail}"
