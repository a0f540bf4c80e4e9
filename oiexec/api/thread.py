"""A conversation with the agent (Codex SDK: `Thread`): each `run` is one turn, and every
turn after the first continues the same session, as `interpreter exec resume ID` does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from pydantic import BaseModel

from oiexec.api.child import ExecJob
from oiexec.api.options import ThreadOptions, TurnOptions, build_request
from oiexec.api.process import RunProcess
from oiexec.api.results import Collector, Turn, adrive, drive
from oiexec.core.errors import UsageError
from oiexec.core.events import ThreadEvent
from oiexec.runner.inputs import check_output_schema

if TYPE_CHECKING:
    from oiexec.runner.request import ExecRequest

__all__ = ["Input", "LocalImageInput", "RunOptions", "StreamedTurn", "TextInput", "Thread"]

#: An output schema: a JSON Schema, or a pydantic model whose instance `Turn.output` becomes.
OutputSchema = dict[str, Any] | type[BaseModel]


class TextInput(TypedDict):
    type: Literal["text"]
    text: str


class LocalImageInput(TypedDict):
    type: Literal["local_image"]
    path: str


#: A prompt, or the Codex SDK's list of text parts and local images.
Input = str | Sequence[TextInput | LocalImageInput]


class RunOptions(TypedDict, total=False):
    """The keywords every way of running a turn takes (`run`, `run_streamed`, `arun`,
    `arun_streamed`): the `exec` flags that apply to one turn, and where its warnings go."""

    #: A JSON Schema dict, or a pydantic model whose instance `Turn.output` becomes.
    output_schema: OutputSchema | None
    max_turns: int | None
    timeout: float | None
    check: str | None
    max_attempts: int | None
    max_tokens: int | None
    max_cost: float | None
    #: Called with each warning the CLI would print on stderr.
    on_warning: Callable[[str], None] | None


class StreamedTurn:
    """The events of one turn as they happen (iterate it once); `result` once it is done.
    Leaving the loop early cancels the turn."""

    def __init__(self, events: Generator[ThreadEvent, None, None], box: list[Turn]) -> None:
        self._events = events
        self._box = box

    def __iter__(self) -> Iterator[ThreadEvent]:
        return self._events

    @property
    def events(self) -> Iterator[ThreadEvent]:
        """The same iterator (Codex SDK: `runStreamed(...).events`)."""
        return self._events

    def close(self) -> None:
        """Stops the turn if it is still running (as leaving the loop and dropping this
        object does): its commands are killed, its session records the interruption."""
        self._events.close()

    @property
    def result(self) -> Turn:
        if not self._box:
            raise RuntimeError("the turn has not finished: iterate over its events first")
        return self._box[0]


class Thread:
    """Created by `Agent.start_thread()` or `Agent.resume_thread(id)`. One turn at a time."""

    def __init__(self, options: ThreadOptions, thread_id: str | None = None) -> None:
        self._options = options
        self._id = thread_id
        self._lock = threading.Lock()
        self._running: RunProcess | None = None

    @property
    def id(self) -> str | None:
        """The thread (session) id: None until the first turn has started."""
        return self._id

    # -- synchronous ------------------------------------------------------------------------

    def run(
        self,
        input: Input,
        *,
        on_event: Callable[[ThreadEvent], None] | None = None,
        **options: Unpack[RunOptions],
    ) -> Turn:
        """Runs one turn to its end and returns it. Raises the package's errors
        (`ConfigError`, `UsageError`, ...) only for a turn that could not start; a turn that
        started and failed is a `Turn` with its `exit_code` and `reason`."""
        streamed = self.run_streamed(input, **options)
        # Closed however the loop ends: a callback that raises must not leave the run going
        # while the exception (whose traceback holds this frame) propagates.
        with contextlib.closing(streamed):
            for event in streamed:
                if on_event is not None:
                    on_event(event)
        return streamed.result

    def run_streamed(
        self,
        input: Input,
        **options: Unpack[RunOptions],
    ) -> StreamedTurn:
        """Starts one turn; iterate the result for its events (the JSONL stream's, typed)."""
        box: list[Turn] = []
        return StreamedTurn(
            self._stream(_TurnPlan(self._options, self._id, input, options), box), box
        )

    def cancel(self) -> None:
        """Cancels the running turn, from any thread: SIGTERM to its processes; the turn
        ends as `turn.failed` with exit code 143."""
        running = self._running
        if running is not None:
            running.cancel()

    def _stream(self, plan: _TurnPlan, box: list[Turn]) -> Generator[ThreadEvent, None, None]:
        process = self._start(plan.request)
        try:
            # Closed explicitly: leaving this loop early must stop the run at once.
            with contextlib.closing(drive(process, plan.collector)) as events:
                for event in events:
                    self._id = self._id or plan.collector.thread_id
                    yield event
        finally:
            self._running = None
        box.append(plan.turn(process))

    def _start(self, request: ExecRequest) -> RunProcess:
        with self._lock:
            if self._running is not None:
                raise UsageError("this thread is already running a turn; wait for it to finish")
            process = RunProcess(ExecJob(request), environment(self._options), str(request.cwd))
            self._running = process
        return process

    # -- asynchronous -----------------------------------------------------------------------

    async def arun(
        self,
        input: Input,
        *,
        on_event: Callable[[ThreadEvent], None] | None = None,
        **options: Unpack[RunOptions],
    ) -> Turn:
        """`run` for asyncio: the loop is never blocked; cancelling the task cancels the turn
        and returns once its processes have ended."""
        box: list[Turn] = []
        events = self._astream(input, options, box)
        async with contextlib.aclosing(events):  # as in `run`
            async for event in events:
                if on_event is not None:
                    on_event(event)
        return box[0]

    async def arun_streamed(
        self,
        input: Input,
        **options: Unpack[RunOptions],
    ) -> AsyncIterator[ThreadEvent]:
        """The turn's events as they happen, for `async for`. Cancelling the task stops the
        turn at once; to stop it by leaving the loop early, iterate inside
        `async with contextlib.aclosing(thread.arun_streamed(...)) as events:` (Python closes
        an abandoned async generator only when it is collected)."""
        async for event in self._astream(input, options, []):
            yield event

    async def _astream(
        self, input: Input, options: RunOptions, box: list[Turn]
    ) -> AsyncGenerator[ThreadEvent, None]:
        plan = _TurnPlan(self._options, self._id, input, options)
        # Starting may start the zygote (about a second, once): off the loop. A start
        # that is under way when the task is cancelled is finished, then stopped.
        started = asyncio.get_running_loop().run_in_executor(None, self._start, plan.request)
        try:
            process = await asyncio.shield(started)
        except asyncio.CancelledError:
            await (await started).astop()
            self._running = None
            raise
        try:
            async with contextlib.aclosing(adrive(process, plan.collector)) as events:
                async for event in events:
                    self._id = self._id or plan.collector.thread_id
                    yield event
        finally:
            self._running = None
        box.append(plan.turn(process))


class _TurnPlan:
    """One turn as both ways of running it (`_stream`, `_astream`) start it: its request,
    checked before anything runs, and the collector that makes its `Turn`."""

    def __init__(
        self, thread: ThreadOptions, thread_id: str | None, input: Input, options: RunOptions
    ) -> None:
        self.schema, turn, on_warning = _turn_options(input, options)
        self.request = build_request(thread, _prompt(input), turn, resume_id=thread_id)
        self.collector = Collector(on_warning)

    def turn(self, process: RunProcess) -> Turn:
        structured = self.request.output_schema is not None
        return self.collector.turn(process.exitcode, structured=structured, schema=self.schema)


def _turn_options(
    input: Input, options: RunOptions
) -> tuple[type[BaseModel] | None, TurnOptions, Callable[[str], None] | None]:
    unknown = sorted(set(options) - set(RunOptions.__annotations__))
    if unknown:
        # What Python says for a keyword a signature does not name: `**options` takes any.
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    output_schema = options.get("output_schema")
    model: type[BaseModel] | None = None
    schema: dict[str, Any] | None
    if isinstance(output_schema, type) and issubclass(output_schema, BaseModel):
        model, schema = output_schema, output_schema.model_json_schema()
    elif output_schema is None or isinstance(output_schema, dict):
        schema = output_schema
        if schema is not None:
            # Checked as exec checks --output-schema's file, before anything runs.
            check_output_schema(schema, "(output_schema=)")
    else:
        raise UsageError(
            f"output_schema must be a JSON Schema dict or a pydantic model class, "
            f"got {type(output_schema).__name__}"
        )
    turn = TurnOptions(
        output_schema=schema,
        max_turns=options.get("max_turns"),
        timeout=options.get("timeout"),
        check=options.get("check"),
        max_attempts=options.get("max_attempts"),
        max_tokens=options.get("max_tokens"),
        max_cost=options.get("max_cost"),
        images=_images(input),
    )
    return model, turn, options.get("on_warning")


def _prompt(input: Input) -> str:
    if isinstance(input, str):
        text = input
    else:
        text = "\n\n".join(str(part.get("text", "")) for part in _parts(input, "text"))
    if not text.strip():
        raise UsageError("the prompt is empty", hint="Pass the task as text.")
    return text


def _images(input: Input) -> tuple[Path, ...]:
    if isinstance(input, str):
        return ()
    return tuple(
        Path(str(part.get("path", ""))).expanduser() for part in _parts(input, "local_image")
    )


def _parts(input: Sequence[Mapping[str, object]], kind: str) -> list[Mapping[str, object]]:
    """The parts of type `kind`; a part of no known type is a usage error."""
    for part in input:
        if not isinstance(part, Mapping) or part.get("type") not in ("text", "local_image"):
            raise UsageError(
                f"input part {part!r}: expected {{'type': 'text', 'text': ...}} or "
                "{'type': 'local_image', 'path': ...}"
            )
    return [part for part in input if part.get("type") == kind]


def environment(options: ThreadOptions) -> dict[str, str]:
    """The run's environment: the agent's `env`, else this process's now (the zygote's
    is from when it started); the Codex SDK's `apiKey` becomes `CODEX_API_KEY`."""
    for key, value in (options.env or {}).items():
        # Checked here: a non-string would otherwise kill the run's process before it could
        # say why.
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(
                f"env[{key!r}] = {value!r}: environment variables and their values are strings",
                hint="Convert the value with str(), or leave the variable out.",
            )
    result = dict(options.env if options.env is not None else os.environ)
    if options.api_key:
        result["CODEX_API_KEY"] = options.api_key
    return result
