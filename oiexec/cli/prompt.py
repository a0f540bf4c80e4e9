"""Where the prompt comes from: the argument, stdin, or both (Codex's rules).

Stdin is read to its end, as Codex reads it, but never silently forever: a pipe left open
with nothing coming gets a one-line hint on stderr after `HINT_AFTER` seconds, the read is
bounded (`PROMPT_MAX`), and `--timeout` (SIGALRM, armed by the runner around the read) ends
it with the timeout's exit code. Without `--timeout` the wait goes on after the hint, as in
Codex: a slow producer (`slow-build | interpreter exec -`) is legitimate.
"""

from __future__ import annotations

import codecs
import os
import select
import sys
from dataclasses import dataclass

from oiexec.core.errors import RunTimedOut, UsageError
from oiexec.core.userfile import PROMPT_MAX, describe_size

NO_PROMPT = "No prompt provided. Either specify one as an argument or pipe the prompt into stdin."
EMPTY_STDIN = "No prompt provided via stdin."
#: Seconds without a byte (and no end of input) before the hint is shown.
HINT_AFTER = 3.0
WAITING_FOR_PROMPT = "waiting for the prompt on stdin; close it or pass the prompt as an argument"
WAITING_FOR_MORE = (
    "waiting for more input on stdin to append to the prompt; close it (e.g. `< /dev/null`) "
    "to run with the prompt alone"
)


def decode_stdin(data: bytes) -> str:
    """UTF-8 (BOM stripped) or UTF-16 with a BOM; anything else is a clear error."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise UsageError("stdin is UTF-32, which is not supported; send UTF-8 instead")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"stdin is not valid UTF-16 (byte {exc.start}); send the prompt as UTF-8 text"
            ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"stdin is not valid UTF-8 (byte {exc.start}); send the prompt as UTF-8 text"
        ) from None


def _too_big() -> UsageError:
    return UsageError(
        f"the prompt on stdin is over the {describe_size(PROMPT_MAX)} limit",
        hint="Send a shorter prompt: point the model at files instead of piping them whole.",
    )


def _hint_if_idle(fd: int, hint: str) -> bool:
    """Waits up to `HINT_AFTER` seconds for `fd` to have data or end (a regular file or
    /dev/null is ready at once); if it has neither by then, shows `hint` and returns True.
    The rest of the wait blocks in the read, which SIGALRM (`--timeout`) or a signal ends."""
    if select.select([fd], [], [], HINT_AFTER)[0]:
        return False
    sys.stderr.write(hint + "\n")
    sys.stderr.flush()
    return True


def read_stdin(hint: str) -> bytes:
    """All of stdin, at most `PROMPT_MAX` bytes; `hint` is shown once if nothing comes for
    `HINT_AFTER` seconds while the input stays open. Stdin not open is empty input."""
    stream = sys.stdin
    if stream is None:
        return b""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        # Replaced by an in-memory stream (an embedding caller): nothing to wait on.
        data = stream.buffer.read(PROMPT_MAX + 1)
        if len(data) > PROMPT_MAX:
            raise _too_big() from None
        return bytes(data)
    chunks: list[bytes] = []
    total = 0
    hinted = False
    while True:
        if not hinted:
            hinted = _hint_if_idle(fd, hint)
        try:
            chunk = os.read(fd, min(1024 * 1024, PROMPT_MAX + 1 - total))
        except BlockingIOError:  # a non-blocking stdin with nothing yet
            select.select([fd], [], [])
            continue
        except OSError as exc:
            raise UsageError(f"cannot read stdin: {exc.strerror or exc}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > PROMPT_MAX:
            raise _too_big()


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True)
class PromptSource:
    """Where the prompt will come from, checked now and read later.

    `check` finds what is wrong without touching stdin (no prompt on a terminal, an empty
    argument); `read` takes stdin. Exec reads only after config, key and flags passed, so a
    mistake fails at once even when stdin stays open (`sleep 4 | interpreter exec …`).
    """

    argument: str | None
    #: A prompt plus piped stdin: the stdin text is appended (not on resume, as in Codex).
    append_stdin: bool = True
    #: The run has a task without a prompt (`--from-junit`): no prompt is the empty one, and
    #: stdin is not read for it (`-` still reads it).
    optional: bool = False

    def check(self) -> None:
        prompt = self.argument
        if prompt is None and self.optional:
            return
        if prompt is None and _stdin_is_tty():
            raise UsageError(NO_PROMPT)
        if prompt is not None and prompt != "-" and not prompt.strip():
            raise UsageError(
                "The prompt is empty. Pass the task as an argument or pipe it to stdin."
            )

    def read(self) -> str:
        """The prompt text.

        No prompt (or `-`): all of stdin is the prompt, untrimmed. A prompt plus piped stdin:
        the stdin text is appended in a `<stdin>` block.
        """
        self.check()
        prompt = self.argument
        if prompt is None and self.optional:
            return ""
        if prompt is None or prompt == "-":
            sys.stderr.write("Reading prompt from stdin...\n")
            text = decode_stdin(_read_or_time_out(WAITING_FOR_PROMPT))
            if not text.strip():
                raise UsageError(EMPTY_STDIN)
            return text
        if self.append_stdin and sys.stdin is not None and not _stdin_is_tty():
            sys.stderr.write("Reading additional input from stdin...\n")
            extra = decode_stdin(_read_or_time_out(WAITING_FOR_MORE))
            if extra.strip():
                return f"{prompt}\n\n<stdin>\n{extra.rstrip(chr(10))}\n</stdin>"
        return prompt


def _read_or_time_out(hint: str) -> bytes:
    """`read_stdin`; `--timeout` running out during it says it was stdin that never ended."""
    try:
        return read_stdin(hint)
    except RunTimedOut as exc:
        raise RunTimedOut(f"{exc.message} while {hint}") from None
