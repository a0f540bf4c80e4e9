"""Loading text files for the tools, splitting them into lines, writing them back safely."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from oiexec.core.errors import ErrorKind, ToolInputError
from oiexec.sandbox.reader import ReadRefused, ReadScope, read_file
from oiexec.sandbox.writer import FileWriter, PathChanged, WriteDenied, WriteGuard, as_writer

#: How much of a file is sniffed for NUL bytes to call it binary.
BINARY_SNIFF_BYTES = 8192


#: Without a run's scope (tests, the prompt's directory overview) reads still take regular
#: files only, bounded, never /proc or /sys; the tools pass `ReadScope.for_policy`.
_UNSCOPED = ReadScope()
#: How each refusal of the reader reaches a harness's wording.
_KINDS: dict[str, ErrorKind] = {
    "missing": "missing",
    "is_directory": "is_directory",
    "not_a_directory": "not_a_directory",
    "too_big": "invalid",
    "changed": "changed",
}


def refused(exc: ReadRefused, path: Path) -> ToolInputError:
    """The tool error for a read the reader refused."""
    if exc.kind == "missing":
        return ToolInputError(f"File does not exist: {path}", kind="missing", path=path)
    if exc.kind == "is_directory":
        return ToolInputError(
            f"{path} is a directory, not a file; list it or glob inside it instead.",
            kind="is_directory",
            path=path,
        )
    return ToolInputError(exc.reason, kind=_KINDS.get(exc.kind, "denied"), path=path)


def read_bytes(path: Path, scope: ReadScope | None = None) -> bytes:
    """The file's bytes through the one in-process reader (`oiexec.sandbox.reader`): a
    regular file the scope allows, at most its byte cap; otherwise a model-actionable error."""
    try:
        return read_file(scope or _UNSCOPED, path).data
    except ReadRefused as exc:
        raise refused(exc, path) from None
    except OSError as exc:
        raise ToolInputError(
            f"{path} cannot be read: {exc.strerror or exc}", kind="denied", path=path
        ) from None


def is_binary(data: bytes) -> bool:
    """Whether `data` looks binary (a NUL byte near the start, as git and ripgrep judge)."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def load_text(path: Path, scope: ReadScope | None = None) -> str:
    """The file's text, exactly (no newline translation); refuses directories and binaries."""
    data = read_bytes(path, scope)
    if is_binary(data):
        raise ToolInputError(
            f"{path} is a binary file; this tool only handles text files.",
            kind="binary",
            path=path,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolInputError(
            f"{path} is not valid UTF-8 text (byte {exc.start}); it cannot be edited as text.",
            kind="binary",
            path=path,
        ) from exc


def split_lines(text: str) -> list[str]:
    """Lines without their endings. Only LF ends a line (a CR before it is dropped too);
    a final line without a newline still counts, an empty file has no lines."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def split_keepends(text: str) -> list[str]:
    """Lines with their endings kept (LF or CRLF); unlike `str.splitlines`, no other
    character (form feed, U+2028, ...) ends a line."""
    out: list[str] = []
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            if start < len(text):
                out.append(text[start:])
            return out
        out.append(text[start : end + 1])
        start = end + 1


def uses_crlf(text: str) -> bool:
    """True when every line break in `text` is CRLF (and there is at least one)."""
    lf = text.count("\n")
    return lf > 0 and text.count("\r\n") == lf


def guard_write(can_write: WriteGuard, path: Path) -> None:
    """Raise with the guard's reason if it refuses `path`."""
    _target, reason = _resolve(as_writer(can_write), path, link_itself=False)
    if reason is not None:
        raise ToolInputError(reason, kind="denied", path=path)


def save_text(path: Path, text: str, *, can_write: WriteGuard) -> None:
    """Write `text` as UTF-8 through the writer (a temp file renamed over the target: a
    failure never leaves half a file, and the file keeps its mode); a symlink keeps pointing
    where it did (its target is rewritten). `can_write` judges the path; given a `FileWriter`
    (the runtime's `PolicyWriter`), it also does the IO, following no symlink it did not
    judge."""
    writer = as_writer(can_write)
    target, reason = _resolve(writer, path, link_itself=False)
    if reason is not None:
        raise ToolInputError(reason, kind="denied", path=path)
    _io(path, lambda: writer.write(target, text.encode("utf-8")))


def remove_file(path: Path, *, can_write: WriteGuard) -> None:
    """Remove the file (or the symlink itself) at `path`, judged by `can_write`."""
    writer = as_writer(can_write)
    target, reason = _resolve(writer, path, link_itself=True)
    if reason is not None:
        raise ToolInputError(reason, kind="denied", path=path)
    _io(path, lambda: writer.remove(target))


def _changed(path: Path) -> ToolInputError:
    return ToolInputError(
        f"{path} changed while being written (a symlink appeared on its way); nothing was "
        "written. Check what is at that path now before trying again.",
        kind="changed",
        path=path,
    )


def _resolve(writer: FileWriter, path: Path, *, link_itself: bool) -> tuple[Path, str | None]:
    try:
        return writer.resolve(path, link_itself=link_itself)
    except PathChanged as exc:
        raise _changed(path) from exc


def _io(path: Path, action: Callable[[], None]) -> None:
    try:
        action()
    except WriteDenied as exc:
        raise ToolInputError(exc.reason, kind="denied", path=path) from exc
    except PathChanged as exc:
        raise _changed(path) from exc
