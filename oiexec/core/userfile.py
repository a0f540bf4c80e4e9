"""The one reader of files the user names: `--output-schema`, `--image`, config files,
hooks.json, a batch's TASKS file.

These are the user's own paths, so a symbolic link is followed wherever it points (unlike the
workspace reader, oiexec/sandbox/reader, which reads what a repository or a command may have
planted). What is refused is what would hang or flood the runner: only a regular file is read
(a FIFO with no writer would block forever, `/dev/zero` never ends, a directory or socket has
nothing to read), and never more than the cap for its kind. The open is non-blocking and
never becomes the controlling terminal, so naming a FIFO or a tty cannot stall it; the file
is judged by `fstat` on the opened descriptor, so what was judged is what is read.

Every refusal is an `OiexecError` of the caller's class (a `UsageError` for a flag, a
`ConfigError` for a config file) whose message starts with the caller's `name` (the flag or
key and the path) and says what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from oiexec.core.errors import OiexecError, UsageError

__all__ = [
    "CONFIG_MAX",
    "IMAGE_MAX",
    "PROMPT_MAX",
    "SCHEMA_MAX",
    "TASKS_MAX",
    "describe_size",
    "read_at_most",
    "read_user_file",
    "read_user_file_if_exists",
    "user_text",
]

MIB = 1024 * 1024
#: A JSON Schema for the final answer: the model gets it whole, so anything near this is a
#: mistake (a log file, a data dump) rather than a schema.
SCHEMA_MAX = 4 * MIB
#: One attached image: above what providers accept for one image, base64 grows it by a third.
IMAGE_MAX = 20 * MIB
#: config.toml and hooks.json: hand-written files, far below this.
CONFIG_MAX = 4 * MIB
#: A batch's TASKS file: many prompts, each possibly long.
TASKS_MAX = 64 * MIB
#: The prompt (stdin): well past any model's context window already.
PROMPT_MAX = 32 * MIB

_CHUNK = MIB
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def describe_size(size: int) -> str:
    """`4 MiB`, `512 KiB`, `17 bytes`: for messages."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= MIB:
        return f"{size / MIB:.1f} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


def _what(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to `limit` + 1 bytes from `fd`, read in chunks: one byte more than `limit` tells
    the caller the source is over its cap (or grew past it) without reading the rest."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _too_big(size: int | None, cap: int) -> str:
    actual = f"is {describe_size(size)}, " if size is not None else ""
    return f"{actual}over the {describe_size(cap)} limit for this file; pass a smaller file"


def _read(
    path: Path, name: str, cap: int, error: type[OiexecError], missing_ok: bool
) -> bytes | None:
    def refuse(reason: str) -> OiexecError:
        return error(f"{name}: {reason}")

    def not_regular(what: str) -> OiexecError:
        return refuse(f"{what}, not a regular file; pass the path of a regular file")

    try:
        # Judged before opening too: opening some devices has effects of its own.
        what = _what(os.stat(path).st_mode)
        if what is not None:
            raise not_regular(what)
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise refuse("no such file") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO's other end
            raise not_regular("is a socket or named pipe") from None
        raise refuse(exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        what = _what(info.st_mode)
        if what is not None:  # swapped in after the first look
            raise not_regular(what)
        if info.st_size > cap:
            raise refuse(_too_big(info.st_size, cap))
        os.set_blocking(fd, True)
        try:
            data = read_at_most(fd, cap)
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
        if len(data) > cap:  # grew while it was read
            raise refuse(_too_big(None, cap))
        return data
    finally:
        os.close(fd)


def read_user_file(
    path: Path, *, name: str, cap: int, error: type[OiexecError] = UsageError
) -> bytes:
    """The bytes of the regular file `path`, at most `cap`; otherwise an `error` whose
    message starts with `name` (the flag or key naming the file, and the path)."""
    data = _read(path, name, cap, error, missing_ok=False)
    assert data is not None  # missing_ok=False raises instead
    return data


def read_user_file_if_exists(
    path: Path, *, name: str, cap: int, error: type[OiexecError] = UsageError
) -> bytes | None:
    """As `read_user_file`, but None when nothing is at `path` (an optional config file)."""
    return _read(path, name, cap, error, missing_ok=True)


def user_text(data: bytes, *, name: str, error: type[OiexecError] = UsageError) -> str:
    """`data` as UTF-8 text; an `error` naming the first bad byte otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not valid UTF-8 (byte {exc.start}); save it as UTF-8") from None
