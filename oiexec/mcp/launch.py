"""How one server is reached: the stdio process (its command, environment, stderr) or the
HTTP endpoint (its headers), built from `[mcp_servers.<id>]` before anything starts.

A stdio server runs under a tiny `sh` wrapper that reports the server's process id and exit
status on stderr, the one channel the SDK hands back to us: with the id the run kills the
server's whole process group when it ends (grandchildren included, even when the server
itself exited cleanly), with the status a failed start says `exited with code N`.

A stdio server runs outside the sandbox, so nothing a sandboxed command wrote may choose what
it runs (oiexec.core.programs): its `command` is refused when it lies in the workspace or a
writable root, or PATH finds it there first (`.venv/bin`), and is otherwise started by the
absolute path found, once; its PATH loses the entries a sandboxed command could write; and
unless config names a `cwd` it starts in an empty directory of its own (`EmptyCwd`), created
by the runner outside every untrusted root, never in the workspace: `npx -y docs-mcp` would
prefer `./node_modules/.bin/docs-mcp` there, and `python -m pkg` would import from it.

The wrapper's reports carry a random mark made for each launch, so a server line that
happens to look like one is never taken for it, and they are found anywhere in a line: a
server that dies after writing a line without its newline has the exit report glued to the
end of that line.
"""

from __future__ import annotations

import collections
import contextlib
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from oiexec.config.headers import sendable
from oiexec.config.mcp import McpServerConfig
from oiexec.core import programs

__all__ = [
    "EmptyCwd",
    "LaunchError",
    "StderrPump",
    "http_headers",
    "server_env",
    "stdio_argv",
    "stdio_launch",
]

#: What a stdio server inherits from oiexec's environment without being asked (Codex's
#: list): enough to find programs and a home, never a provider key.
DEFAULT_ENV_VARS = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "__CF_USER_TEXT_ENCODING",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
)

# $0 is the server's command, "$@" its arguments: the shell reports its own id (the process
# group the server runs in), runs the server, and reports how it ended. MARK is the launch's
# own mark (StderrPump.mark).
_WRAPPER = 'echo "MARK pid $$" >&2; "$0" "$@"; s=$?; echo "MARK exit $s" >&2; exit $s'
_STDERR_TAIL = 8


class LaunchError(Exception):
    """The server cannot even be started (no command, missing variable); the message says
    which and what to do."""


def server_env(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The default set, then `env_vars` passed through, then the literal `env`."""
    names = (*DEFAULT_ENV_VARS, *config.env_vars)
    env = {name: environ[name] for name in names if name in environ}
    env.update(config.env)
    return env


def stdio_argv(config: McpServerConfig, env: Mapping[str, str], cwd: Path, mark: str) -> list[str]:
    """The wrapper's argv (`sh -c WRAPPER /abs/command args...`) reporting under `mark`, after
    finding the command as exec would and checking it may run outside the sandbox, so a typo
    is named instead of surfacing as `exited with code 127`, and a planted program is never
    started. The absolute path is what runs: the wrapper never looks the name up again."""
    assert config.command is not None
    command = config.command
    if not cwd.is_dir():
        raise LaunchError(f"cwd `{cwd}` is not a directory")
    path, refusal = programs.judge_program(command, cwd=cwd, path_value=env.get("PATH", os.defpath))
    if refusal is not None:
        raise LaunchError(f"command refused: {refusal}")
    if path is None and os.sep in command:
        raise LaunchError(f"command `{command}` does not exist or is not executable")
    if path is None:
        raise LaunchError(f"command `{command}` not found on the server's PATH")
    return ["/bin/sh", "-c", _WRAPPER.replace("MARK", mark), path, *config.args]


class EmptyCwd:
    """The working directory of stdio servers without a configured `cwd`: one empty
    directory (mode 0700) per set of servers, made on first use outside every untrusted root
    (the runtime dir, /var/tmp, oiexec's home, or the temp dir when it is not a writable root
    of the run), removed with whatever a server left in it by `remove`."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._lock = threading.Lock()

    def path(self) -> Path:
        with self._lock:
            if self._path is None:
                self._path = Path(tempfile.mkdtemp(prefix="oiexec-mcp-cwd-", dir=_empty_base()))
            return self._path

    def remove(self) -> None:
        with self._lock:
            path, self._path = self._path, None
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)


def _empty_base() -> Path:
    from oiexec.config.environment import default_home

    home = default_home() / "run"
    candidates = [
        os.environ.get("XDG_RUNTIME_DIR") or "",
        f"/run/user/{os.geteuid()}",
        # Sticky and world-writable like /tmp, but no sandbox makes it writable (unless it
        # is $TMPDIR, then untrusted): mkdtemp's 0700 directory there is ours alone.
        "/var/tmp",
        str(home),
        tempfile.gettempdir(),
    ]
    for candidate in candidates:
        if not candidate or programs.untrusted_holder(candidate) is not None:
            continue
        if candidate == str(home):
            with contextlib.suppress(OSError):
                home.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    # Nothing outside: oiexec's home holds config.toml and hooks.json, which start programs
    # outside the sandbox anyway; a home commands can write is warned about at load time.
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return home


def stdio_launch(
    config: McpServerConfig,
    environ: Mapping[str, str],
    workspace: Path,
    empty: EmptyCwd,
    mark: str,
) -> tuple[list[str], dict[str, str], Path]:
    """(argv, env, cwd) of a stdio server: `cwd` from config (relative to the workspace),
    else the empty directory; the command judged against the PATH config gives it; PATH then
    cut to what no sandboxed command can write. Raises `LaunchError`."""
    env = server_env(config, environ)
    if config.cwd:
        cwd = workspace / config.cwd
    else:
        try:
            cwd = empty.path()
        except OSError as exc:
            raise LaunchError(
                f"no empty directory for the server to start in ({exc}); set its `cwd`"
            ) from exc
    argv = stdio_argv(config, env, cwd, mark)
    if "PATH" in env:
        env["PATH"] = programs.trusted_path_value(env["PATH"])
    return argv, env, cwd


def http_headers(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """`http_headers`, then `env_http_headers` (unset or empty variables skipped, as Codex
    does), then `Authorization: Bearer` from `bearer_token_env_var`, which must be set."""
    headers = dict(config.http_headers)
    for header, variable in config.env_http_headers.items():
        value = environ.get(variable, "").strip()
        if value:
            headers[header] = _sendable(variable, value)
    if config.bearer_token_env_var:
        token = environ.get(config.bearer_token_env_var, "").strip()
        if not token:
            raise LaunchError(
                f"environment variable `{config.bearer_token_env_var}` (bearer_token_env_var) "
                "is not set; export it or remove bearer_token_env_var"
            )
        headers["Authorization"] = f"Bearer {_sendable(config.bearer_token_env_var, token)}"
    return headers


def _sendable(variable: str, value: str) -> str:
    # httpx would fail on it deep in the connection; the value (a credential) is not shown.
    if not sendable(value):
        raise LaunchError(
            f"environment variable `{variable}` holds a character that cannot be sent in an "
            "HTTP header (a header value is ASCII text on one line)"
        )
    return value


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (field 22 of
    /proc/PID/stat); None when the process is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()
    return fields[19].decode() if len(fields) > 19 else None


@dataclass
class StderrPump:
    """Reads a stdio server's stderr on its own thread: the wrapper's marks are kept, every
    other line goes to `note` (the run log), the last few are kept for error messages."""

    note: Callable[[str], None]
    #: What the wrapper's reports start with: random, so no server line can pass for one.
    mark: str = field(default_factory=lambda: f"oiexec-mcp-{secrets.token_hex(8)}")
    pid: int | None = None
    #: When the process `pid` names started (Linux), so a later kill can tell it from a new
    #: process that was given the same id after the server's group was gone.
    leader_start: str | None = None
    exit_code: int | None = None
    tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=_STDERR_TAIL)
    )
    exited: threading.Event = field(default_factory=threading.Event)
    _writer: TextIO | None = None
    _thread: threading.Thread | None = None

    def open(self) -> TextIO:
        """The file the server's stderr is written to (the write end of a pipe)."""
        read_fd, write_fd = os.pipe()
        self._writer = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(target=self._pump, args=(reader,), daemon=True)
        self._thread.start()
        return self._writer

    def release(self) -> None:
        """Closes our copy of the write end once the server holds its own, so the reader sees
        end-of-file when the server's process group is gone."""
        if self._writer is not None:
            with contextlib.suppress(OSError):
                self._writer.close()
            self._writer = None

    def _pump(self, reader: TextIO) -> None:
        with reader:
            for raw in reader:
                line, report = self._split(raw.rstrip("\n"))
                if line:
                    self.tail.append(line)
                    with contextlib.suppress(Exception):  # the log must never break a run
                        self.note(line)
                if report is not None:
                    self._record(*report)
        self.exited.set()

    def _split(self, line: str) -> tuple[str, tuple[str, str] | None]:
        """The server's own text, and the wrapper's report (`pid`/`exit`, value) that ends
        the line, if any."""
        at = line.find(self.mark + " ")
        if at < 0:
            return line, None
        kind, _, value = line[at + len(self.mark) + 1 :].partition(" ")
        return line[:at], (kind, value)

    def _record(self, kind: str, value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            return
        if kind == "pid" and self.pid is None:
            self.pid = number
            self.leader_start = process_start(number)
        elif kind == "exit":
            self.exit_code = number
            self.exited.set()

    def group_is_ours(self) -> bool:
        """Whether the process group `pid` still belongs to the server: false only when a
        process of that id exists and started at another time (the id was reused)."""
        if self.pid is None:
            return False
        now = process_start(self.pid)
        return now is None or self.leader_start is None or now == self.leader_start

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
