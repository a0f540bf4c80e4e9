"""What a turn and a review return, and how the child's messages become them."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from oiexec.api.process import RunProcess
from oiexec.core import errors
from oiexec.core.errors import ExitCode, OiexecError
from oiexec.core.events import (
    ItemCompleted,
    ThreadEvent,
    ThreadItem,
    ThreadStarted,
    Usage,
    parse_event,
)
from oiexec.review.model import ReviewFinding, ReviewOutput
from oiexec.runner.child_protocol import RunMessage

__all__ = ["Collector", "ReviewResult", "Turn", "adrive", "drive"]


@dataclass(frozen=True)
class Turn:
    """One completed `run` (Codex SDK: `Turn`), whatever its outcome: check `exit_code`
    (the CLI's exit code, `ExitCode.SUCCESS` is 0) or `ok`; `reason` says why it failed."""

    #: The final answer ("" when the turn ended without one); the JSON text under a schema.
    final_response: str
    #: Every item completed in this turn, in order (the JSONL stream's `item.completed`s).
    items: list[ThreadItem]
    #: Tokens used, cumulative for the thread as in `turn.completed`.
    usage: Usage
    exit_code: ExitCode
    #: The `turn.failed` message, e.g. "turn limit reached ...".
    reason: str | None
    #: The limit that ended the turn: "max_turns", "timeout", "max_tokens", "max_cost" or
    #: "stalled" (`stall_turns`).
    limit: str | None
    #: The change the turn made to the working tree, as a patch `git apply` accepts.
    diff: str | None
    #: The final answer parsed: the `output_schema` model's instance, or the decoded JSON.
    output: Any
    thread_id: str | None
    #: Model turns (requests to the model) in this run; what `max_turns` counts.
    turns: int
    duration_s: float
    #: Warnings the CLI would print on stderr.
    warnings: list[str] = field(default_factory=list)
    #: What this run cost in USD at the model's price (config's `model_pricing`, else the
    #: model catalog's); None when no price is known.
    cost_usd: float | None = None
    #: The thread's running total in USD, earlier runs (and a fork's parent) included; None
    #: when any part of it is unknown.
    session_cost_usd: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.SUCCESS

    def raise_for_status(self) -> Turn:
        """Returns the turn when it succeeded, else raises the class the CLI maps to its exit
        code (`MaxTurnsExceeded` for 4, `CheckFailed` for 8, ...; `Interrupted`, a
        BaseException like KeyboardInterrupt, for 130 and 143), with `reason` as message."""
        if self.ok:
            return self
        if self.exit_code == ExitCode.TERMINATED:
            raise errors.Interrupted("SIGTERM")
        if self.exit_code == ExitCode.INTERRUPTED:
            raise errors.Interrupted("SIGINT")
        raise _error_for(self.exit_code)(self.reason or f"the turn failed (exit {self.exit_code})")


@dataclass(frozen=True)
class ReviewResult:
    """A review's findings and the gate's verdict (`interpreter review`'s exit code)."""

    exit_code: ExitCode
    #: The structured review, locations checked; None when the run failed.
    review: ReviewOutput | None
    #: The findings that block under the gate (`fail_on`, `min_confidence`).
    blocking: list[ReviewFinding]
    #: The review as text, as `interpreter review` prints it.
    text: str
    reason: str | None
    thread_id: str | None
    usage: Usage
    items: list[ThreadItem]
    warnings: list[str] = field(default_factory=list)
    #: What the review cost in USD (None: no price is known), as `Turn.cost_usd`.
    cost_usd: float | None = None

    @property
    def findings(self) -> list[ReviewFinding]:
        return list(self.review.findings) if self.review is not None else []

    @property
    def passed(self) -> bool:
        """Nothing blocks and the review was read: exit code 0."""
        return self.exit_code == ExitCode.SUCCESS

    @property
    def blocked(self) -> bool:
        """The gate blocked (exit code 7)."""
        return self.exit_code == ExitCode.REVIEW_BLOCKED


class Collector:
    """Reads a run's messages: hands events on, keeps what the result is made of, and raises
    the package's own error for a run that never started."""

    def __init__(self, on_warning: Callable[[str], None] | None = None) -> None:
        self.items: list[ThreadItem] = []
        self.warnings: list[str] = []
        self.thread_id: str | None = None
        self.payload: dict[str, Any] | None = None
        self._on_warning = on_warning

    def take(self, message: RunMessage) -> ThreadEvent | None:
        """The event `message` carries, or None; raises for a run that did not start."""
        if message["op"] == "event":
            event = parse_event(message["line"])
            if isinstance(event, ThreadStarted):
                self.thread_id = event.thread_id
            elif isinstance(event, ItemCompleted):
                self.items.append(event.item)
            return event
        if message["op"] == "warning":
            self.warnings.append(message["text"])
            if self._on_warning is not None:
                self._on_warning(message["text"])
        elif message["op"] == "done":
            self.payload = json.loads(message["result"])
        elif message["op"] == "error":
            raise _error(message["classes"], message["message"], message["hint"])
        elif message["op"] == "interrupted":
            self.payload = {"exit_code": message["exit_code"], "failure": message["message"]}
        else:
            raise OiexecError("internal error in the run's process", hint=message["text"])
        return None

    def finish(self, exitcode: int | None) -> dict[str, Any]:
        if self.payload is None:
            raise OiexecError(
                f"the run's process ended without a result (exit status {exitcode})",
                hint="It was killed from outside, or crashed; see the session's run log.",
            )
        return self.payload

    def turn(
        self, exitcode: int | None, *, structured: bool, schema: type[BaseModel] | None
    ) -> Turn:
        data = self.finish(exitcode)
        code = ExitCode(data["exit_code"])
        final = data.get("final_message") or ""
        output: Any = None
        if code == ExitCode.SUCCESS and final and structured:
            output = schema.model_validate_json(final) if schema else json.loads(final)
        return Turn(
            final_response=final,
            items=self.items,
            usage=Usage.model_validate(data.get("usage") or {}),
            exit_code=code,
            reason=data.get("failure"),
            limit=data.get("limit"),
            diff=data.get("diff"),
            output=output,
            thread_id=data.get("thread_id") or self.thread_id,
            turns=data.get("turns", 0),
            duration_s=data.get("duration_s", 0.0),
            warnings=self.warnings,
            cost_usd=data.get("cost_usd"),
            session_cost_usd=data.get("session_cost_usd"),
        )

    def review(self, exitcode: int | None) -> ReviewResult:
        data = self.finish(exitcode)
        review = data.get("review")
        return ReviewResult(
            exit_code=ExitCode(data["exit_code"]),
            review=ReviewOutput.model_validate(review) if review else None,
            blocking=[ReviewFinding.model_validate(f) for f in data.get("blocking", [])],
            text=data.get("final_message") or "",
            reason=data.get("failure"),
            thread_id=data.get("thread_id") or self.thread_id,
            usage=Usage.model_validate(data.get("usage") or {}),
            items=self.items,
            warnings=self.warnings,
            cost_usd=data.get("cost_usd"),
        )


def drive(process: RunProcess, collector: Collector) -> Generator[ThreadEvent, None, None]:
    """The run's events, blocking, until its process has ended. Leaving early (an
    interrupt, the caller's loop broken off) stops the run: it must not outlive the caller's
    interest in it."""
    try:
        for message in process.messages():
            event = collector.take(message)
            if event is not None:
                yield event
    except OiexecError:
        process.close()  # the run did not start; its process is on its way out
        raise
    except BaseException:
        process.stop()
        raise
    process.close()


async def adrive(process: RunProcess, collector: Collector) -> AsyncGenerator[ThreadEvent, None]:
    """`drive` on the event loop; a cancelled task stops the run and waits for its end."""
    try:
        async for message in process.amessages():
            event = collector.take(message)
            if event is not None:
                yield event
    except OiexecError:
        await process.aclose()
        raise
    except BaseException:
        await process.astop()
        raise
    await process.aclose()


def _error_for(code: ExitCode) -> type[OiexecError]:
    """The class of `oiexec.core.errors` that declares the exit code `code`."""
    for value in vars(errors).values():
        if (
            isinstance(value, type)
            and issubclass(value, OiexecError)
            and value.__dict__.get("exit_code") == code
        ):
            return value
    return OiexecError


def _error(names: Sequence[str], message: str, hint: str | None) -> OiexecError:
    """The child's error as the same class, or the nearest one of `oiexec.core.errors` above
    it: the class the CLI maps to its exit code."""
    message, hint = _api_words(message), _api_words(hint) if hint else hint
    for name in names:
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, OiexecError):
            return cls(message, hint=hint)
    return OiexecError(message, hint=hint)


#: The runner words its errors for the command line; a Python caller set the same things
#: through the API's arguments, and is told their names instead.
_API_WORDS = (
    (" -c values are TOML: -c key=true, -c key=100, -c 'key=\"text\"' (a bare word is read "
     "as a string).", ""),
    ("in -c override", "in Agent(config=...)"),
    ("in command-line flag", "in an Agent option"),
    ("--skip-git-repo-check", "skip_git_repo_check=True"),
    ("--ignore-rules", "ignore_rules=True"),
    ("-m/--model", "model="),
    ("e.g. -m gpt-5.5", "e.g. model='gpt-5.5'"),
    ("--output-schema", "output_schema="),
    ("--max-turns", "max_turns="),
    ("--max-cost", "max_cost="),
    ("--max-tokens", "max_tokens="),
    ("--image ", "local_image "),
)  # fmt: skip


def _api_words(text: str) -> str:
    for cli, api in _API_WORDS:
        text = text.replace(cli, api)
    return text
