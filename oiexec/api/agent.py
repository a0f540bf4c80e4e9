"""The entry point of the Python API (Codex SDK: `Codex`): settings shared by its threads,
and reviews."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from oiexec.api.child import ReviewJob
from oiexec.api.options import (
    PathLike,
    ReasoningEffort,
    SandboxMode,
    ThreadOptions,
    TurnOptions,
    build_request,
)
from oiexec.api.process import RunProcess
from oiexec.api.results import Collector, ReviewResult, adrive, drive
from oiexec.api.thread import Thread, environment
from oiexec.core.errors import UsageError
from oiexec.core.events import ThreadEvent

if TYPE_CHECKING:
    from oiexec.review.targets import ReviewTarget

__all__ = ["Agent", "ReviewOptions"]


class ReviewOptions(TypedDict, total=False):
    """The keywords of `review` and `areview`: the change to review (exactly one of
    `uncommitted`, `base`, `commit` or `instructions`), the gate, the limits, and where
    warnings go. Defaults: `fail_on="P1"`, `min_confidence=0.0`, `structured_output=True`."""

    uncommitted: bool
    #: A branch: review what this branch adds over it.
    base: str | None
    #: A commit SHA: review that commit.
    commit: str | None
    title: str | None
    #: Custom review instructions instead of a diff.
    instructions: str | None
    fail_on: str
    min_confidence: float
    structured_output: bool
    max_turns: int | None
    timeout: float | None
    on_warning: Callable[[str], None] | None


class Agent:
    """Runs the agent from Python, on the same runner and with the same rules as
    `interpreter exec`: config files, profiles, the environment and `config` (dotted keys as
    `-c` takes them) are layered as for the CLI, the approval policy is always `never`, the
    sandbox fails closed, secrets are redacted and limits are enforced.

    Every turn runs in a child process of its own, so threads may run at the same time, from
    Python threads or asyncio tasks. Nothing is printed: progress comes as events."""

    def __init__(
        self,
        *,
        model: str | None = None,
        sandbox: SandboxMode | None = None,
        cwd: PathLike | None = None,
        harness: str | None = None,
        profile: str | None = None,
        config: Mapping[str, Any] | None = None,
        skip_git_repo_check: bool = False,
        reasoning_effort: ReasoningEffort | None = None,
        network_access: bool | None = None,
        additional_directories: Sequence[PathLike] = (),
        ephemeral: bool = False,
        strict_config: bool = False,
        ignore_rules: bool = False,
        env: Mapping[str, str] | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self._options = ThreadOptions(
            model=model,
            sandbox=sandbox,
            cwd=cwd,
            harness=harness,
            profile=profile,
            config=dict(config or {}),
            skip_git_repo_check=skip_git_repo_check,
            reasoning_effort=reasoning_effort,
            network_access=network_access,
            additional_directories=tuple(additional_directories),
            ephemeral=ephemeral,
            strict_config=strict_config,
            ignore_rules=ignore_rules,
            env=dict(env) if env is not None else None,
            api_key=api_key,
            base_url=base_url,
        )

    @property
    def options(self) -> ThreadOptions:
        return self._options

    def start_thread(self, **overrides: Any) -> Thread:
        """A new thread; keyword arguments override the agent's settings for it (the same
        names as the constructor's). Nothing runs until `run`."""
        return Thread(self._with(overrides))

    def resume_thread(self, thread_id: str, **overrides: Any) -> Thread:
        """The thread (session) `thread_id`, from any `Agent` or an `interpreter exec` run:
        its next turn continues it, made as its session was unless overridden here."""
        if not isinstance(thread_id, str) or not thread_id.strip():
            raise UsageError("resume_thread needs a thread id")
        return Thread(self._with(overrides), thread_id.strip())

    def review(
        self,
        *,
        on_event: Callable[[ThreadEvent], None] | None = None,
        **options: Unpack[ReviewOptions],
    ) -> ReviewResult:
        """Reviews a change read-only, as `interpreter review` does: exactly one of
        `uncommitted`, `base` (a branch), `commit` (a SHA) or `instructions`. The result has
        the findings and the gate's verdict (`passed`, `blocked`, `exit_code` 0/7/1)."""
        process, collector = self._start_review(options)
        with contextlib.closing(drive(process, collector)) as events:
            for event in events:
                if on_event is not None:
                    on_event(event)
        return collector.review(process.exitcode)

    async def areview(
        self,
        *,
        on_event: Callable[[ThreadEvent], None] | None = None,
        **options: Unpack[ReviewOptions],
    ) -> ReviewResult:
        """`review` for asyncio."""
        loop = asyncio.get_running_loop()
        started = loop.run_in_executor(
            None,
            lambda: self._start_review(options),
        )
        try:
            process, collector = await asyncio.shield(started)
        except asyncio.CancelledError:
            await (await started)[0].astop()
            raise
        async with contextlib.aclosing(adrive(process, collector)) as events:
            async for event in events:
                if on_event is not None:
                    on_event(event)
        return collector.review(process.exitcode)

    def _start_review(self, options: ReviewOptions) -> tuple[RunProcess, Collector]:
        from oiexec.review.gate import GatePolicy, parse_fail_on, parse_min_confidence
        from oiexec.runner.review import ReviewRequest

        unknown = sorted(set(options) - set(ReviewOptions.__annotations__))
        if unknown:
            # What Python says for a keyword a signature does not name: `**options` takes any.
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        target = _target(
            options.get("uncommitted", False),
            options.get("base"),
            options.get("commit"),
            options.get("title"),
            options.get("instructions"),
        )
        gate = GatePolicy(
            fail_on=parse_fail_on(str(options.get("fail_on", "P1"))),
            min_confidence=parse_min_confidence(str(options.get("min_confidence", 0.0))),
        )
        turn = TurnOptions(max_turns=options.get("max_turns"), timeout=options.get("timeout"))
        request = build_request(self._options, "", turn)
        if self._options.sandbox not in (None, "read-only"):
            request = dataclasses.replace(
                request,
                warnings=(
                    f"review always runs in the read-only sandbox; ignoring "
                    f"sandbox={self._options.sandbox!r}",
                ),
            )
        job = ReviewJob(
            ReviewRequest(
                exec=request,
                target=target,
                gate=gate,
                structured_output=options.get("structured_output", True),
            )
        )
        process = RunProcess(job, environment(self._options), str(request.cwd))
        return process, Collector(options.get("on_warning"))

    def _with(self, overrides: Mapping[str, Any]) -> ThreadOptions:
        names = {f.name for f in dataclasses.fields(ThreadOptions)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise UsageError(
                f"unknown thread option(s): {', '.join(unknown)}",
                hint=f"Use the Agent's options: {', '.join(sorted(names))}.",
            )
        return dataclasses.replace(self._options, **overrides)


def _target(
    uncommitted: bool,
    base: str | None,
    commit: str | None,
    title: str | None,
    instructions: str | None,
) -> ReviewTarget:
    from oiexec.review.targets import (
        BaseBranchTarget,
        CommitTarget,
        CustomTarget,
        UncommittedTarget,
    )

    given = [
        name
        for name, value in (
            ("uncommitted", uncommitted),
            ("base", base),
            ("commit", commit),
            ("instructions", instructions),
        )
        if value
    ]
    if len(given) != 1:
        raise UsageError(
            "review needs exactly one target: uncommitted=True, base=BRANCH, commit=SHA or "
            f"instructions=TEXT (given: {', '.join(given) or 'none'})"
        )
    if title and not commit:
        raise UsageError("title= can only be used with commit=")
    if uncommitted:
        return UncommittedTarget()
    if base:
        return BaseBranchTarget(base)
    if commit:
        return CommitTarget(commit, title)
    return CustomTarget(instructions or "")
