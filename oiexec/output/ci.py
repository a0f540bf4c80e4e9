"""What a run tells the CI system it runs in: GitHub Actions and GitLab CI.

- GitHub Actions (`GITHUB_ACTIONS=true`): a failed run ends with one `::error` workflow
  command naming why, so the reason shows on the run's page and not only deep in the log;
  every run appends a short Markdown block to `$GITHUB_STEP_SUMMARY` (outcome, exit code,
  model turns, tokens, cost, changed files, reports). The runner reads workflow commands from
  the step's stdout *and* stderr (actions/runner, Runner.Worker/Handlers/ScriptHandler.cs
  hands both streams to an OutputManager, which calls TryProcessCommand on each line; GitHub's
  docs only mention stdout), so they go to stderr: with `--json`, stdout stays pure JSONL.
- The human transcript folds each model turn: `::group::` in GitHub Actions, a collapsed
  section in GitLab CI (`GITLAB_CI=true`; the markers of GitLab's "custom collapsible
  sections": `ESC[0Ksection_start:<unix time>:<name>[collapsed=true]\\r ESC[0K<header>` ...
  `ESC[0Ksection_end:<unix time>:<name>\\r ESC[0K`).

The step summary file is opened when the run starts, like every report (output/reportfile):
where it lands is fixed before the model runs, and no link a command planted is followed.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from oiexec.core.costs import show_usd
from oiexec.core.errors import OiexecError
from oiexec.core.events import Usage
from oiexec.core.redact import redact
from oiexec.output.reportfile import ReportTarget

__all__ = [
    "CiReporter",
    "RunSummary",
    "TurnFolds",
    "escape_data",
    "escape_property",
    "in_github_actions",
    "in_gitlab_ci",
    "render_summary",
    "step_summary_target",
    "turn_folds",
    "workflow_command",
]

#: How many changed files the step summary lists by name (the rest are counted).
MAX_LISTED_FILES = 20

Warn = Callable[[str], None]


def in_github_actions(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("GITHUB_ACTIONS") == "true"


def in_gitlab_ci(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("GITLAB_CI") == "true"


# --- workflow commands ---------------------------------------------------------------------


def escape_data(text: str) -> str:
    """Escape a workflow command's message the way the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (also `:` and `,`, which delimit them)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str) -> str:
    """`::command key=value,...::message`, every part escaped."""
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{command}{' ' + rendered if rendered else ''}::{escape_data(message)}"


def step_summary_target(
    env: Mapping[str, str] | None = None, *, untrusted: Sequence[Path] = ()
) -> ReportTarget | None:
    """`$GITHUB_STEP_SUMMARY` opened for appending (None when it is not set); `untrusted` as
    for every report. Raises `UsageError` for a path that cannot take it."""
    path = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    return ReportTarget.open(path, "the GitHub step summary", append=True, untrusted=untrusted)


def open_step_summary(
    warn: Warn, env: Mapping[str, str] | None = None, *, untrusted: Sequence[Path] = ()
) -> ReportTarget | None:
    """The step summary in GitHub Actions, else None; one that cannot be opened is a
    warning (it is the CI's file, not one the user named: the run goes on without it)."""
    if not in_github_actions(env):
        return None
    try:
        return step_summary_target(env, untrusted=untrusted)
    except OiexecError as exc:
        warn(f"no GitHub step summary: {exc.message}")
        return None


# --- folding the transcript ------------------------------------------------------------------


class TurnFolds:
    """The lines that open and close one model turn's fold in the CI log."""

    def __init__(self, kind: str, clock: Callable[[], float] = time.time) -> None:
        self.kind = kind
        self._clock = clock
        # GitLab pairs markers by name: unique per turn, and per run (two runs in one job).
        self._run = secrets.token_hex(3)
        self._open: str | None = None

    def start(self, number: int) -> list[str]:
        """The lines that close the open fold (if any) and open turn `number`'s."""
        lines = self.end()
        header = f"Turn {number}"
        if self.kind == "github":
            lines.append(f"::group::{header}")
            self._open = header
        else:
            name = f"oiexec_{self._run}_turn_{number}"
            lines.append(
                f"\x1b[0Ksection_start:{int(self._clock())}:{name}[collapsed=true]\r\x1b[0K{header}"
            )
            self._open = name
        return lines

    def end(self) -> list[str]:
        """The line that closes the open fold; none when no fold is open."""
        if self._open is None:
            return []
        name, self._open = self._open, None
        if self.kind == "github":
            return ["::endgroup::"]
        return [f"\x1b[0Ksection_end:{int(self._clock())}:{name}\r\x1b[0K"]


def turn_folds(env: Mapping[str, str] | None = None) -> TurnFolds | None:
    """How this CI folds a turn, or None outside GitHub Actions and GitLab CI."""
    if in_github_actions(env):
        return TurnFolds("github")
    if in_gitlab_ci(env):
        return TurnFolds("gitlab")
    return None


# --- the run's summary -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """What the step summary says about one run. `None` fields are unknown and left out
    (a run that failed before it started has only an outcome, an exit code and a reason)."""

    command: str
    #: The JUnit report's status word (`success`, `failed`, `limit`, `interrupted`, ...).
    outcome: str
    exit_code: int
    reason: str | None = None
    #: Model requests this invocation made (`model_turns` in JUnit).
    turns: int | None = None
    #: This invocation's tokens (not the resumed session's earlier ones).
    usage: Usage | None = None
    #: This invocation's cost in USD; None when unknown (no price) or, with no `usage`, not
    #: asked (a run that never started).
    cost_usd: float | None = None
    #: The session's running total, shown when it differs from `cost_usd` (a resumed run).
    session_cost_usd: float | None = None
    thread_id: str | None = None
    #: The files the final diff changed; None when no diff was computed.
    changed_files: Sequence[str] | None = None
    #: (flag, path) of each report the run wrote.
    reports: Sequence[tuple[str, str]] = ()
    #: What else a reader must know (the writes a read-only sandbox refused).
    notes: Sequence[str] = ()
    #: Markdown shown after the table as it is (a matrix batch's charts and table): the
    #: caller's own text, built from values it made safe for Markdown.
    markdown: str | None = None


def _cell(text: str) -> str:
    """Text for a Markdown table cell: HTML-escaped (a file name is no markup), `|` kept
    from splitting the cell, line breaks as `<br>`."""
    import html  # only a step summary has cells: a run outside CI never needs it

    escaped = html.escape(redact(text), quote=False).replace("|", "&#124;")
    return "<br>".join(escaped.splitlines()) or escaped


def _code(text: str) -> str:
    return f"<code>{_cell(text)}</code>"


def render_summary(summary: RunSummary) -> str:
    """The Markdown block appended to the step summary (starts with a blank line, so it never
    joins an earlier step's last line)."""
    mark = "✅" if summary.exit_code == 0 else "❌"
    rows = [("Outcome", f"{mark} {_cell(summary.outcome)}"), ("Exit code", str(summary.exit_code))]
    if summary.reason:
        rows.append(("Reason", _cell(summary.reason)))
    if summary.turns is not None:
        rows.append(("Turns", str(summary.turns)))
    if summary.usage is not None:
        u = summary.usage
        rows.append(
            (
                "Tokens",
                f"{u.input_tokens:,} input ({u.cached_input_tokens:,} cached), "
                f"{u.output_tokens:,} output",
            )
        )
    if summary.usage is not None:
        cost = show_usd(summary.cost_usd)
        if summary.session_cost_usd != summary.cost_usd:
            cost += f" (session: {show_usd(summary.session_cost_usd)})"
        rows.append(("Cost", cost))
    if summary.thread_id:
        rows.append(("Session", _code(summary.thread_id)))
    if summary.changed_files is not None:
        rows.append(("Changed files", _files(summary.changed_files)))
    if summary.notes:
        rows.append(("Note", "<br>".join(_cell(note) for note in summary.notes)))
    if summary.reports:
        listed = (f"{_cell(flag)} {_code(path)}" for flag, path in summary.reports)
        rows.append(("Reports", "<br>".join(listed)))
    title = f"### oiexec {summary.command}: {_cell(summary.outcome)}"
    lines = ["", title, "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    if summary.markdown:
        lines += ["", summary.markdown.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _files(paths: Sequence[str]) -> str:
    if not paths:
        return "none"
    shown = [_code(p) for p in paths[:MAX_LISTED_FILES]]
    more = len(paths) - len(shown)
    if more > 0:
        shown.append(f"… and {more} more")
    return f"{len(paths)}: " + "<br>".join(shown)


class CiReporter:
    """The CI side of one run, made once per run from the environment (`open`): `finish`
    says how it ended (the `::error` line and the step summary), once."""

    def __init__(self, *, summary: ReportTarget | None, stream: TextIO, warn: Warn) -> None:
        self._summary = summary
        self._stream = stream
        self._warn = warn
        self.finished = False

    @classmethod
    def open(
        cls,
        warn: Warn,
        *,
        env: Mapping[str, str] | None = None,
        untrusted: Sequence[Path] = (),
        stream: TextIO | None = None,
    ) -> CiReporter | None:
        """None outside GitHub Actions; there, the step summary is opened now (before the
        model runs)."""
        if not in_github_actions(env):
            return None
        summary = open_step_summary(warn, env, untrusted=untrusted)
        return cls(summary=summary, stream=stream or sys.stderr, warn=warn)

    def finish(self, summary: RunSummary) -> None:
        """The `::error` line when the run failed, then the summary block; later calls do
        nothing (the run said it, the CLI's failure path must not say it again)."""
        if self.finished:
            return
        self.finished = True
        if summary.exit_code != 0:
            reason = summary.reason or f"the run failed with exit code {summary.exit_code}"
            line = workflow_command(
                "error",
                redact(f"{reason} (exit code {summary.exit_code})"),
                title=f"oiexec {summary.command}",
            )
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                pass  # stderr is gone: nothing else can carry it either
        if self._summary is not None:
            try:
                self._summary.write(render_summary(summary))
            except OSError as exc:
                self._warn(f"could not write {self._summary.label}: {exc.strerror or exc}")

    def close(self) -> None:
        if self._summary is not None:
            self._summary.close()
