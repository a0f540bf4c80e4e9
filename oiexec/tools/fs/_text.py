"""Loading text files for the tools, splitting them into lines, writing them back safely."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from oiexec.tools.fs.errors import ToolInputError

#: How much of a file is sniffed for NUL bytes to call it binary.
BINARY_SNIFF_BYTES = 8192

WriteGuard = Callable[[Path], "str | None"]


def check_existing_file(path: Path) -> None:
    """Raise a model-actionable error unless `path` is an existing regular file."""
    if not path.exists():
        raise ToolInputError(f"File does not exist: {path}", kind="missing", path=path)
    if path.is_dir():
        raise ToolInputError(
            f"{path} is a directory, not a file; list it or glob inside it instead.",
            kind="is_directory",
            path=path,
        )


def is_binary(data: bytes) -> bool:
    """Whether `data` looks binary (a NUL byte near the start, as git and ripgrep judge)."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def load_text(path: Path) -> str:
    """The file's text, exactly (no newline translation); refuses directories and binaries."""
    check_existing_file(path)
    data = path.read_bytes()
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
    reason = can_write(path)
    if reason is not None:
        raise ToolInputError(reason, kind="denied", path=path)


def atomic_write(path: Path, text: str) -> None:
    """Write `text` as UTF-8 through a temp file and a rename, so a failure mid-write never
    leaves a half-written file; an existing file keeps its permission bits, and a symlink
    keeps pointing where it did (its target is rewritten)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(target.stat().st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    # Reading it via os.umask would briefly set it process-wide, racing other threads.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022
