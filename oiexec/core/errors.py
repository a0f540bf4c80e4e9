"""One rooted error tree; every class carries the exit code the CLI returns for it.

    OiexecError                 exit 1  (the run failed)
    ├── UsageError              exit 2  (bad flags or arguments)
    ├── ConfigError             exit 3  (config files, -c overrides, providers, API keys)
    ├── LimitExceeded           (never raised directly)
    │   ├── MaxTurnsExceeded    exit 4
    │   ├── RunTimedOut         exit 5
    │   ├── MaxTokensExceeded   exit 9  (`--max-tokens`)
    │   ├── MaxCostExceeded     exit 10 (`--max-cost`)
    │   └── Stalled             exit 12 (`--stall-turns`: the run goes in circles)
    ├── SandboxUnavailable      exit 6
    ├── CheckFailed             exit 8  (`--check` still failing after the last attempt)
    ├── NoChange                exit 11 (`--require-change` and the run changed no file)
    ├── ProviderError           exit 1  (the model provider failed after retries)
    │   ├── ProviderUnavailable exit 1  (a transient failure outlasted the retries: the
    │   │                               one `model_fallbacks` moves on from)
    │   └── ContextWindowExceeded exit 1 (the request is larger than the model's window)
    └── SessionError            exit 1  (unknown or unreadable session)
    Interrupted                 exit 130 (SIGINT), 143 (SIGTERM)

A blocking review finding is an outcome, not an error: the review returns
`ExitCode.REVIEW_BLOCKED` (exit 7) with its findings.

A second, separate tree holds what the model should see instead of the run ending:

    ModelFacingError            becomes the failing call's error result (or a correction)
    ├── ToolInputError          bad arguments or a failed edit; `kind` says which (a call
    │                           too large or not JSON is refused by core/call_screen.py)
    └── ReviewParseError        a review answer that does not parse (review/parse.py)

Third-party errors are translated into this tree where they cross into the package, so the
CLI only ever has to map `OiexecError.exit_code`.

Every failure also belongs to one *failure class* (`FailureClass`, docs/exec.md "Failure
classes"), which says what to do about it: `transient` (try again later: the provider or the
network failed), `budget` (a limit was reached), `task` (the model did not get the task done),
`config` and `usage` (fix the setup or the command line), `sandbox`, `internal`, and
`interrupted`. Exit codes alone cannot say it: a provider outage and an internal error both exit
1. `turn.failed`, JUnit failures and batch records carry the class; `batch --retry transient`
reruns by it.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path
from typing import ClassVar, Literal, get_args

FailureClass = Literal[
    "transient", "budget", "task", "config", "usage", "sandbox", "internal", "interrupted"
]
#: Every failure class, in the order reports list them.
FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)


class ExitCode(IntEnum):
    """The documented exit codes of `interpreter` (docs/exec.md, "Exit codes")."""

    SUCCESS = 0
    FAILED = 1
    USAGE = 2
    CONFIG = 3
    MAX_TURNS = 4
    TIMEOUT = 5
    SANDBOX_UNAVAILABLE = 6
    REVIEW_BLOCKED = 7
    CHECK_FAILED = 8
    MAX_TOKENS = 9
    MAX_COST = 10
    NO_CHANGE = 11
    #: `--stall-turns`: the run repeated a failing command or stopped making progress.
    STALLED = 12
    #: `batch --max-total-cost`: the tasks' costs reached the limit and some were not started.
    TOTAL_COST = 13
    INTERRUPTED = 130
    #: 128 + SIGTERM: what CI runners expect from a job they cancelled.
    TERMINATED = 143


class OiexecError(Exception):
    """Base of every error the package raises on purpose."""

    exit_code: ClassVar[ExitCode] = ExitCode.FAILED
    #: What kind of failure this is; anything not classed below is the runner's own fault.
    failure_class: ClassVar[FailureClass] = "internal"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class UsageError(OiexecError):
    exit_code = ExitCode.USAGE
    failure_class: ClassVar[FailureClass] = "usage"


class ConfigError(OiexecError):
    exit_code = ExitCode.CONFIG
    failure_class: ClassVar[FailureClass] = "config"


class LimitExceeded(OiexecError):
    """A run limit was reached; `limit` names it in `turn.failed`."""

    limit: ClassVar[str] = ""
    failure_class: ClassVar[FailureClass] = "budget"


class MaxTurnsExceeded(LimitExceeded):
    exit_code = ExitCode.MAX_TURNS
    limit = "max_turns"


class RunTimedOut(LimitExceeded):
    exit_code = ExitCode.TIMEOUT
    limit = "timeout"


class MaxTokensExceeded(LimitExceeded):
    """`--max-tokens`: the run's input + output tokens went past the budget."""

    exit_code = ExitCode.MAX_TOKENS
    limit = "max_tokens"


class MaxCostExceeded(LimitExceeded):
    """`--max-cost`: the run's priced usage went past the budget."""

    exit_code = ExitCode.MAX_COST
    limit = "max_cost"


class Stalled(LimitExceeded):
    """`--stall-turns` (`stall_turns`): the run went in circles (agent/stall.py)."""

    exit_code = ExitCode.STALLED
    limit = "stalled"
    # Not a budget running out: the model went in circles on the task.
    failure_class: ClassVar[FailureClass] = "task"


class SandboxUnavailable(OiexecError):
    exit_code = ExitCode.SANDBOX_UNAVAILABLE
    failure_class: ClassVar[FailureClass] = "sandbox"


class CheckFailed(OiexecError):
    """The `--check` command still failed after the last allowed attempt."""

    exit_code = ExitCode.CHECK_FAILED
    failure_class: ClassVar[FailureClass] = "task"


class NoChange(OiexecError):
    """`--require-change`: the run ended with an empty diff, so what was asked was not done."""

    exit_code = ExitCode.NO_CHANGE
    failure_class: ClassVar[FailureClass] = "task"


class InvalidAnswer(OiexecError):
    """The model's final answer broke a rule of the run (`--output-schema`) after its one
    chance to correct it: the task was not done, whatever the provider did right."""

    failure_class: ClassVar[FailureClass] = "task"


class ProviderError(OiexecError):
    """The provider answered with an error we do not retry, or retries ran out."""

    # A refusal no retry fixes (a bad key, an unknown model, a request it rejects): the
    # configuration must change. The transient kind is `ProviderUnavailable`.
    failure_class: ClassVar[FailureClass] = "config"


class ProviderUnavailable(ProviderError):
    """A transient failure (5xx, 408/409/429, a dropped or idle stream, no connection) that
    was still failing when the retries ran out: the provider may be back later, or another
    model may answer now (`model_fallbacks`). Anything else the provider refused (a bad key,
    a bad request) is a plain `ProviderError`, which no other model would fix."""

    failure_class: ClassVar[FailureClass] = "transient"


class ContextWindowExceeded(ProviderError):
    """The provider refused the request as too long for the model (HTTP 413 or a
    context-length error). The loop compacts and retries once before giving up."""

    failure_class: ClassVar[FailureClass] = "budget"  # the model's window is a token budget


class SessionError(OiexecError):
    failure_class: ClassVar[FailureClass] = "usage"  # an unknown or unreadable session was named


class Interrupted(BaseException):
    """Raised from the SIGINT/SIGTERM handler so cleanup runs and reports are written before
    exiting: 130 for SIGINT (Ctrl-C), 143 for SIGTERM (how CI runners cancel a job)."""

    def __init__(self, signal_name: Literal["SIGINT", "SIGTERM"] = "SIGINT") -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name
        self.exit_code = ExitCode.TERMINATED if signal_name == "SIGTERM" else ExitCode.INTERRUPTED
        self.message = f"interrupted by {signal_name}"


# --- errors the model should see -----------------------------------------------------------


class ModelFacingError(Exception):
    """Something the model did wrong and can fix on its next call. Never ends the run: the
    tool (or the review parser) turns it into text the model reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


ErrorKind = Literal[
    "missing",
    "is_directory",
    "not_a_directory",
    "binary",
    "exists",
    "not_found",
    "ambiguous",
    "no_change",
    "invalid",
    # A call's arguments over the size limit of one call (oiexec.core.call_screen).
    "too_large",
    "denied",
    "not_read",
    "stale",
    "patch_failed",
    "changed",
    # The stage at which a `*** Begin Patch` patch failed (oiexec.tools.apply_patch).
    "parse",
    "verify",
    "io",
]


class ToolInputError(ModelFacingError):
    """A tool call the model must correct; the message says how.

    `kind` and the optional details let a harness renderer restate it in upstream words
    (SWE-agent, for instance, lists the line numbers of ambiguous matches).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = "invalid",
        path: Path | None = None,
        count: int | None = None,
        lines: tuple[int, ...] = (),
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.path = path
        self.count = count
        self.lines = lines


def failure_of(exc: BaseException) -> tuple[str, ExitCode] | None:
    """Why a command stopped and the exit code the CLI gives it, for every report of a
    command that ends by raising (the JSONL failure line, the failure JUnit, the CI summary):
    one mapping, so they never disagree. The message is not yet redacted (each writer does
    that where it writes). None for what is not a failure (`SystemExit` and its kind)."""
    if isinstance(exc, OiexecError):
        # With the hint: a report is often all a reader of a CI run looks at.
        return exc.render(), exc.exit_code
    if isinstance(exc, Interrupted):
        return exc.message, exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT", ExitCode.INTERRUPTED
    if isinstance(exc, Exception):
        return f"internal error: {type(exc).__name__}: {exc}", ExitCode.FAILED
    return None


#: The class of a failure known only by its exit code (a task killed before it could say, a
#: record written before classes existed). Exit 1 could be any of several; `internal` is the
#: one that claims nothing.
_CLASS_BY_EXIT: dict[int, FailureClass] = {
    ExitCode.USAGE: "usage",
    ExitCode.CONFIG: "config",
    ExitCode.MAX_TURNS: "budget",
    ExitCode.TIMEOUT: "budget",
    ExitCode.MAX_TOKENS: "budget",
    ExitCode.MAX_COST: "budget",
    ExitCode.TOTAL_COST: "budget",
    ExitCode.SANDBOX_UNAVAILABLE: "sandbox",
    ExitCode.REVIEW_BLOCKED: "task",
    ExitCode.CHECK_FAILED: "task",
    ExitCode.NO_CHANGE: "task",
    ExitCode.STALLED: "task",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "interrupted",
}


def failure_class_of(exc: BaseException) -> FailureClass:
    """The failure class of what ended a run (`Interrupted` and Ctrl-C are `interrupted`;
    anything outside the tree is `internal`)."""
    if isinstance(exc, OiexecError):
        return exc.failure_class
    if isinstance(exc, Interrupted | KeyboardInterrupt):
        return "interrupted"
    return "internal"


def failure_class_for_exit(code: int) -> FailureClass | None:
    """The failure class a bare exit code implies: None for 0, `interrupted` for a death by
    signal (negative, as `subprocess` reports it), `internal` for 1 and anything unknown."""
    if code == 0:
        return None
    if code < 0:
        return "interrupted"
    return _CLASS_BY_EXIT.get(code, "internal")
