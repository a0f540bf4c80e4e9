"""`interpreter review` and `interpreter exec review`: pick the target, build the request,
run the review, exit with the gate's code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from oiexec.cli.options import REPORT_PATH, exec_options, merged_params
from oiexec.cli.request import build_request

if TYPE_CHECKING:
    from oiexec.review.baseline import Baseline

F = TypeVar("F", bound=Callable[..., Any])

NO_TARGET = "Specify --uncommitted, --base, --commit, or provide custom review instructions"

_REVIEW_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--uncommitted", is_flag=True, help="Review staged, unstaged and untracked changes."
    ),
    click.option("--base", "base_branch", metavar="BRANCH", help="Review changes against BRANCH."),
    click.option("--commit", "commit_sha", metavar="SHA", help="Review the changes of one commit."),
    click.option("--title", metavar="TITLE", help="With --commit: the commit's title."),
    click.option(
        "--fail-on",
        default="P1",
        show_default=True,
        metavar="P0|P1|P2|P3",
        help="Block (exit 7) on findings of this priority or more severe.",
    ),
    click.option(
        "--min-confidence",
        default="0",
        show_default=True,
        metavar="X",
        help="Only findings with confidence >= X (0 to 1) can block.",
    ),
    click.option(
        "--baseline",
        "baseline_file",
        metavar="FILE",
        help="An earlier --sarif report: findings it already has are marked unchanged and "
        "do not block; only new ones count for --fail-on.",
    ),
    click.option(
        "--show-unchanged",
        is_flag=True,
        help="With --baseline: also list the unchanged findings in the Markdown and JUnit "
        "reports and the annotations (by default they list new findings only).",
    ),
    click.option(
        "--sarif",
        "sarif_file",
        type=REPORT_PATH,
        metavar="FILE",
        help="Write the findings as SARIF 2.1.0 (GitHub code scanning).",
    ),
    click.option(
        "--markdown",
        "markdown_file",
        type=REPORT_PATH,
        metavar="FILE",
        help="Write a Markdown report of the review.",
    ),
    click.option(
        "--structured-output/--no-structured-output",
        default=True,
        show_default=True,
        help="Also request the review JSON Schema as structured output from the model "
        "(turn off for servers that reject json_schema response formats).",
    ),
]


def review_options(func: F) -> F:
    for option in reversed(_REVIEW_OPTIONS):
        func = option(func)
    return func


def _review_command(name: str, doc: str) -> click.Command:
    @click.command(name, help=doc)
    @exec_options
    @review_options
    @click.argument("prompt", required=False)
    @click.pass_context
    def command(ctx: click.Context, /, **_: Any) -> None:
        run_review_command(ctx)

    return command


_DOC = """Review a change read-only and fail (exit 7) when a finding blocks the merge.

Targets (exactly one): --uncommitted, --base BRANCH, --commit SHA [--title T], or custom
review instructions as PROMPT (`-` reads them from stdin). The JUnit (--junit) report has one
test case per finding; -o writes the review as text.
"""

#: `interpreter exec review`, added to the exec group.
exec_review_command = _review_command("review", _DOC)
#: `interpreter review`, the same command at the top level.
review_command = _review_command("review", _DOC)


def run_review_command(ctx: click.Context) -> None:
    from dataclasses import replace

    from oiexec.cli.failure_line import json_failure
    from oiexec.cli.request import report_paths
    from oiexec.review.gate import GatePolicy, parse_fail_on, parse_min_confidence
    from oiexec.runner.failure_reports import reports_on_failure
    from oiexec.runner.review import ReviewRequest, run_review
    from oiexec.runner.signals import interrupt_signals

    params = merged_params(ctx)
    paths = report_paths(params)
    # Once the flags parsed, every exit leaves the reports they name (a usage error too), and
    # with --json a failure before the run's stream starts ends it with turn.failed.
    reporting = reports_on_failure(paths, kind="review", name="review")
    with json_failure(params) as failure, interrupt_signals(), reporting as reports:
        target, prompt = _target(params)
        gate = GatePolicy(
            fail_on=parse_fail_on(params["fail_on"]),
            min_confidence=parse_min_confidence(params["min_confidence"]),
        )
        baseline = _baseline(params, paths.untrusted)
        base = build_request(params, "")
        base = replace(base, warnings=(*base.warnings, *_read_only_warnings(params)))
        result = run_review(
            ReviewRequest(
                exec=base,
                target=target,
                gate=gate,
                junit=paths.junit,
                sarif=paths.sarif,
                markdown=paths.markdown,
                structured_output=bool(params.get("structured_output", True)),
                baseline=baseline,
                show_unchanged=bool(params.get("show_unchanged")),
            ),
            prompt=prompt,
            reports=reports,
            processor=failure.processor(),
        )
    ctx.exit(int(result.exit_code))


def _baseline(params: dict[str, Any], untrusted: tuple[Path, ...]) -> Baseline | None:
    """`--baseline`, read now: a bad file fails before the model is asked anything.
    (`--show-unchanged` alone is no error: a workflow's first run has no baseline yet.)"""
    from oiexec.review.baseline import load_baseline

    if not params.get("baseline_file"):
        return None
    return load_baseline(Path(params["baseline_file"]).expanduser(), untrusted)


def _read_only_warnings(params: dict[str, Any]) -> list[str]:
    """A review always runs read-only: a flag asking otherwise is named, not silently lost."""
    asked = []
    if params.get("sandbox_mode") and params["sandbox_mode"] != "read-only":
        asked.append(f"-s {params['sandbox_mode']}")
    if params.get("bypass"):
        asked.append("--dangerously-bypass-approvals-and-sandbox")
    if not asked:
        return []
    return [f"review always runs in the read-only sandbox; ignoring {' and '.join(asked)}"]


def _target(params: dict[str, Any]) -> tuple[Any, Callable[[], str] | None]:
    """The review target, and for `-` the reader of its instructions (stdin is read only
    once everything else has been checked)."""
    from oiexec.cli.prompt import PromptSource
    from oiexec.core.errors import UsageError
    from oiexec.review.targets import (
        BaseBranchTarget,
        CommitTarget,
        CustomTarget,
        UncommittedTarget,
    )

    prompt: str | None = params.get("prompt")
    given = [
        flag
        for flag, value in (
            ("--uncommitted", params.get("uncommitted")),
            ("--base", params.get("base_branch")),
            ("--commit", params.get("commit_sha")),
            ("PROMPT", prompt is not None),
        )
        if value
    ]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} cannot be used together; pick one review target")
    if params.get("title") and not params.get("commit_sha"):
        raise UsageError("--title can only be used with --commit")
    if not given:
        raise UsageError(NO_TARGET)
    if params.get("uncommitted"):
        return UncommittedTarget(), None
    if params.get("base_branch"):
        return BaseBranchTarget(params["base_branch"]), None
    if params.get("commit_sha"):
        return CommitTarget(params["commit_sha"], params.get("title")), None
    if prompt == "-":
        return CustomTarget(""), PromptSource("-", append_stdin=False).read
    if not (prompt or "").strip():
        raise UsageError(NO_TARGET)
    return CustomTarget(prompt or ""), None
