"""With `--json`, a run that fails before its thread starts still says why on stdout.

A usage or config error, an unknown session, a report path that cannot be written, an
interrupt while the prompt is read: all of them end the command before `thread.started`, and
used to print only on stderr, leaving a consumer that reads stdout alone (the Codex SDK, a
`jq` pipeline, a batch reading a task's events) with an empty stream and an exit code. Once
the flags have parsed, every such failure now ends the stream with one
`{"type":"turn.failed","error":{"message":...}}` line: the event a failed run always ends
with, on which the Codex SDK's `run()` throws the message. Not an `error` event: those are
non-fatal notices (`Reconnecting... 1/5`) that consumers log and read past.

Once the run has written its first event it owns the stream, and it ends it itself
(`turn.completed` or `turn.failed`, runner/exec): nothing more is added here then, so a run
never ends with two terminal events. Click's own usage errors (an unknown flag) come before
the flags have parsed, when whether `--json` was a flag at all is not known (it may be the
value of `-o` or a prompt after `--`); they stay on stderr with exit 2, as Codex's do.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from oiexec.core.errors import FailureClass
    from oiexec.core.protocols import EventProcessor

__all__ = ["JsonFailure", "json_failure"]


class _Watched:
    """Stdout, remembering whether the run wrote anything to it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.used = False

    def write(self, text: str, /) -> int:
        self.used = True
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


@dataclass
class JsonFailure:
    """`processor()` is what the run shows its events with (None without `--json`: the
    runner picks as usual); the context ends a stream the run never started."""

    enabled: bool
    _stdout: _Watched | None = None

    def processor(self) -> EventProcessor | None:
        if not self.enabled:
            return None
        from oiexec.output.jsonl import JsonlProcessor

        self._stdout = _Watched(sys.stdout)
        return JsonlProcessor(self._stdout, sys.stderr)

    def fail(self, message: str, failure_class: FailureClass = "usage") -> None:
        """The `turn.failed` line, unless the run already began the stream."""
        if not self.enabled or (self._stdout is not None and self._stdout.used):
            return
        from oiexec.core.events import ThreadError, TurnFailed, to_json_line
        from oiexec.core.redact import redact

        event = TurnFailed(error=ThreadError(message=message), failure_class=failure_class)
        line = redact(to_json_line(event))
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except OSError:
            pass  # stdout is gone (a closed pipe): stderr still has the error


@contextmanager
def json_failure(params: dict[str, Any]) -> Iterator[JsonFailure]:
    """Ends the JSONL stream with `turn.failed` when the body raises before the run wrote
    its first event; the error then goes on to the CLI (stderr, exit code) as before."""
    import click

    from oiexec.core.errors import failure_class_of, failure_of

    state = JsonFailure(bool(params.get("json_mode") or params.get("experimental_json")))
    try:
        yield state
    except click.exceptions.Exit:
        raise  # `--help` and the like: not a failure
    except click.ClickException as exc:
        state.fail(exc.format_message())
        raise
    except BaseException as exc:
        failure = failure_of(exc)
        if failure is not None:
            # With the hint: it says what to do, and stdout may be all the reader sees.
            state.fail(failure[0], failure_class_of(exc))
        raise
