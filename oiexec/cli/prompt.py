"""Where the prompt comes from: the argument, stdin, or both (Codex's rules)."""

from __future__ import annotations

import codecs
import sys
from dataclasses import dataclass
from typing import BinaryIO

from oiexec.core.errors import UsageError

NO_PROMPT = "No prompt provided. Either specify one as an argument or pipe the prompt into stdin."
EMPTY_STDIN = "No prompt provided via stdin."


def decode_stdin(data: bytes) -> str:
    """UTF-8 (BOM stripped) or UTF-16 with a BOM; anything else is a clear error."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise UsageError("stdin is UTF-32, which is not supported; send UTF-8 instead")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"stdin is not valid UTF-8 (byte {exc.start}); send the prompt as UTF-8 text"
        ) from None


def _stdin() -> BinaryIO:
    return sys.stdin.buffer


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

    def check(self) -> None:
        prompt = self.argument
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
        if prompt is None or prompt == "-":
            sys.stderr.write("Reading prompt from stdin...\n")
            text = decode_stdin(_stdin().read())
            if not text.strip():
                raise UsageError(EMPTY_STDIN)
            return text
        if self.append_stdin and sys.stdin is not None and not _stdin_is_tty():
            sys.stderr.write("Reading additional input from stdin...\n")
            extra = decode_stdin(_stdin().read())
            if extra.strip():
                return f"{prompt}\n\n<stdin>\n{extra.rstrip(chr(10))}\n</stdin>"
        return prompt
