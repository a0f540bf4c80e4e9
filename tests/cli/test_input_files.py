"""Files the user names are read only when they are regular files, and bounded: a FIFO with
no writer, `/dev/zero`, a directory, a socket or an oversized file is a clear error at once,
never a hang or a flood. The reader in-process; each kind of input where it is read; the
CLI where a user would see it."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.config.layers import read_toml_layer
from oiexec.config.user_file import read_user_document
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.userfile import (
    CONFIG_MAX,
    IMAGE_MAX,
    SCHEMA_MAX,
    TASKS_MAX,
    describe_size,
    read_user_file,
    read_user_file_if_exists,
    user_text,
)
from oiexec.extensions.hooks import read_hooks_file
from oiexec.runner.batch.tasks import load_tasks
from oiexec.runner.inputs import read_images, read_output_schema
from tests.cli.test_json_failures import only_failure
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer

#: Every refusal comes at once; the bound is generous for a loaded 2-core machine.
BOUND = 5.0


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no time to make (a hole)."""
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A FIFO with no writer, a character device, a directory and a listening socket."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    # A short directory: a socket's path must fit in sun_path (108 bytes).
    short = Path(tempfile.mkdtemp(prefix="oi-"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(short / "s"))
    try:
        yield {
            "is a named pipe (FIFO)": fifo,
            "is a character device": Path("/dev/zero"),
            "is a directory": directory,
            "is a socket": short / "s",
        }
    finally:
        server.close()
        (short / "s").unlink()
        short.rmdir()


def _message(expected: type[Exception], call: object, /, *args: object, **kwargs: object) -> str:
    """The message of the `expected` error `call(*args, **kwargs)` raises, within the bound."""
    started = time.monotonic()
    with pytest.raises(expected) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    assert time.monotonic() - started < BOUND
    return str(getattr(info.value, "message", info.value))


# --- the reader ----------------------------------------------------------------------------


def test_only_regular_files_are_read(specials: dict[str, Path], tmp_path: Path) -> None:
    for what, path in specials.items():
        name = f"--flag {path}"
        message = _message(UsageError, read_user_file, path, name=name, cap=1024)
        assert message.startswith(f"{name}: {what}, not a regular file"), message
        # A link to it (the user's paths may be links) is judged by what it points at.
        link = tmp_path / f"link-{path.name}"
        link.symlink_to(path)
        assert what in _message(UsageError, read_user_file, link, name="x", cap=1024)
    regular = tmp_path / "ok.txt"
    regular.write_bytes(b"fine")
    link = tmp_path / "link-ok"
    link.symlink_to(regular)
    assert read_user_file(link, name="x", cap=4) == b"fine"  # exactly the cap is allowed


def test_the_cap_refuses_big_files_without_reading_them(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big", 64 * 1024 * 1024 * 1024)  # 64 GiB of hole
    message = _message(UsageError, read_user_file, big, name="--flag big", cap=1024)
    assert message == (
        "--flag big: is 65536 MiB, over the 1 KiB limit for this file; pass a smaller file"
    )
    # A file whose size says nothing (0 on /proc) is cut off by what is read.
    grown = _message(UsageError, read_user_file, Path("/proc/self/maps"), name="m", cap=16)
    assert "over the 16 bytes limit" in grown


def test_missing_files_errors_and_text(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert _message(UsageError, read_user_file, missing, name="--f nope", cap=9) == (
        "--f nope: no such file"
    )
    assert read_user_file_if_exists(missing, name="x", cap=9) is None
    # The caller's class: a config file's problem is a config error (exit 3).
    assert "is a directory" in _message(
        ConfigError, read_user_file_if_exists, tmp_path, name="c", cap=9, error=ConfigError
    )
    assert _message(UsageError, user_text, b"ok\xff", name="f") == (
        "f: not valid UTF-8 (byte 2); save it as UTF-8"
    )
    assert describe_size(4 * 1024 * 1024) == "4 MiB" and describe_size(1536) == "1536 bytes"


# --- each kind of input, where it is read ---------------------------------------------------


def test_every_kind_of_input_refuses_a_fifo_and_a_file_over_its_cap(
    specials: dict[str, Path], tmp_path: Path
) -> None:
    fifo = specials["is a named pipe (FIFO)"]
    png = tmp_path / "pipe.png"
    png.symlink_to(fifo)
    readers = [
        # (reader, error class, what the message names, its cap, a file name it accepts)
        (lambda p: read_output_schema(p), UsageError, "(--output-schema)", SCHEMA_MAX, "s.json"),
        (lambda p: read_images((p,)), UsageError, "--image", IMAGE_MAX, "i.png"),
        (lambda p: read_toml_layer("user", p), ConfigError, "config file", CONFIG_MAX, "c.toml"),
        (lambda p: read_user_document(p), ConfigError, "config file", CONFIG_MAX, "u.toml"),
        (lambda p: read_hooks_file(p), ConfigError, "cannot read", CONFIG_MAX, "hooks.json"),
        (lambda p: load_tasks(p), UsageError, "tasks file", TASKS_MAX, "tasks.jsonl"),
    ]
    for read, error, names, cap, filename in readers:
        target = png if filename.endswith(".png") else fifo
        message = _message(error, read, target)
        assert names in message and str(target) in message, message
        assert "is a named pipe (FIFO), not a regular file" in message, message
        big = _sparse(tmp_path / filename, cap + 1)
        message = _message(error, read, big)
        assert f"over the {describe_size(cap)} limit" in message and str(big) in message
        big.unlink()


# --- through the CLI ---------------------------------------------------------------------


@pytest.mark.parametrize("which", ["/dev/zero", "fifo"])
def test_cli_refuses_a_schema_that_never_ends(
    which: str, model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """`--output-schema /dev/zero` grew to 23.7 GB; a FIFO with no writer hung forever."""
    path = Path(which) if which.startswith("/") else tmp_path / which
    if not path.exists():
        os.mkfifo(path)
    started = time.monotonic()
    result = run_cli(
        [*exec_args(model_server), "--output-schema", str(path), "x"], cwd=repo, timeout=30
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert f"Failed to read output schema file {path} (--output-schema): is a" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Failed to read output schema file" in only_failure(result)  # --json
    assert elapsed < BOUND + 5, elapsed  # the refusal is instant; the rest is start-up
    assert model_server.requests == []


def test_cli_refuses_an_oversized_image(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    image = _sparse(tmp_path / "huge.png", IMAGE_MAX + 1)
    result = run_cli([*exec_args(model_server), f"--image={image}", "x"], cwd=repo, timeout=30)
    assert result.returncode == 2, result.stderr
    assert f"--image {image}: is 20.0 MiB, over the 20 MiB limit" in result.stderr
    assert model_server.requests == []
