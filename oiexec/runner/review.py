"""`interpreter exec review`: one read-only exec run that must end in a structured review,
then location checks, the merge gate and the CI reports.

A target with no change at all (a clean tree, an empty range) passes at once without asking
the model, so a pull request from a fork, which has no API key, is not failed for nothing.

Every exit leaves the reports named: when no review came back, a failing JUnit case, an
unsuccessful-execution SARIF log and a Markdown note with the reason (runner/failure_reports).

Exit codes: the run's own code when the run failed (1, 3, 4, 5, 6, 130, 143), else
`ExitCode.FAILED` when no structured review came back even after one correction (a review
that could not be read must not pass a gate), else `REVIEW_BLOCKED` (7) when a finding
blocks, else 0.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.agent.final import Retry
from oiexec.core.context import ItemEmitter
from oiexec.core.errors import ExitCode
from oiexec.core.events import AgentMessageItem, ReviewItem
from oiexec.core.protocols import EventProcessor
from oiexec.core.redact import redact
from oiexec.output.reportfile import ReportTarget
from oiexec.review.gate import GatePolicy, blocking_findings, priority_label
from oiexec.review.locate import locate_findings
from oiexec.review.model import ReviewFinding, ReviewOutput, review_output_json_schema
from oiexec.review.parse import ReviewParseError, correction_message, fallback_review, parse_review
from oiexec.review.prompt import review_instructions
from oiexec.review.render.text import render_review_text
from oiexec.review.targets import (
    BaseBranchTarget,
    CommitTarget,
    CustomTarget,
    ResolvedTarget,
    ReviewTarget,
    ReviewTargetError,
    UncommittedTarget,
    changed_lines,
    has_changes,
    resolve_target,
)
from oiexec.runner.exec import RunHooks, run_exec
from oiexec.runner.failure_reports import write_review_failure
from oiexec.runner.reports import (
    ReportFiles,
    ReportPaths,
    Warn,
    open_all_reports,
    save_report,
    stderr_warning,
    untrusted_roots,
)
from oiexec.runner.request import ExecRequest
from oiexec.runner.result import RunResult

if TYPE_CHECKING:
    from oiexec.review.baseline import Baseline, BaselineComparison, BaselineResult

__all__ = [
    "FALLBACK_MESSAGE",
    "ReviewAnswer",
    "ReviewRequest",
    "ReviewResult",
    "run_review",
]

FALLBACK_MESSAGE = (
    "the reviewer did not answer with a structured review, even after a correction; "
    "failing rather than passing the gate unchecked"
)


@dataclass(frozen=True)
class ReviewRequest:
    """An exec request (its prompt is replaced by the target's message) plus review options."""

    exec: ExecRequest
    target: ReviewTarget
    gate: GatePolicy = field(default_factory=GatePolicy)
    junit: Path | None = None
    sarif: Path | None = None
    markdown: Path | None = None
    #: Also send the review JSON Schema as structured output (the rubric always asks for the
    #: shape in words, so wires or servers without structured output still work with False).
    structured_output: bool = True
    #: `--baseline`, read and checked before anything runs: findings it has do not block.
    baseline: Baseline | None = None
    #: `--show-unchanged`: Markdown, JUnit and annotations list baseline findings too.
    show_unchanged: bool = False


@dataclass
class ReviewResult:
    exit_code: ExitCode
    run: RunResult
    review: ReviewOutput | None = None
    blocking: list[ReviewFinding] = field(default_factory=list)
    fell_back: bool = False


class ReviewAnswer:
    """The final-answer policy of a review: parse, correct once, else fall back; then check
    locations and present the result as text plus a `review` item."""

    def __init__(
        self,
        resolved: ResolvedTarget,
        changed: dict[str, set[int]] | None,
        warn: Warn | None = None,
        baseline: Baseline | None = None,
    ) -> None:
        self._resolved = resolved
        self._changed = changed
        self._warn = warn or stderr_warning
        self._baseline = baseline
        self.review: ReviewOutput | None = None
        self.fell_back = False
        #: Set with a baseline, once a review came back.
        self.comparison: BaselineComparison | None = None

    def accept(self, text: str, attempt: int) -> str | Retry:
        try:
            parsed = parse_review(text)
        except ReviewParseError as exc:
            if attempt == 1:
                return Retry(correction_message(exc))
            self.review, self.fell_back = fallback_review(text), True
            return render_review_text(self.review)
        self.review = self._locate(parsed)
        if self._baseline is not None:
            # Before `present`: the review item carries each finding's baseline_state.
            self.comparison = _compare(self.review, self._baseline, self._resolved.repo_root)
            self.review = self.comparison.review
        return render_review_text(self.review)

    def present(self, text: str, items: ItemEmitter) -> None:
        if self.review is not None:
            data = self.review.model_dump(mode="json")
            items.completed(ReviewItem(id=items.next_id(), review=data))
        # The text last: like Codex, the review's agent_message is the final response.
        items.completed(AgentMessageItem(id=items.next_id(), text=text))

    def _locate(self, review: ReviewOutput) -> ReviewOutput:
        resolved = self._resolved
        try:
            return locate_findings(
                review, resolved.repo_root, self._changed, revision=resolved.revision
            )
        except Exception as exc:  # a location check must not lose the review itself
            self._warn(f"could not check review locations: {exc}")
            return review


def run_review(
    request: ReviewRequest,
    warn: Warn | None = None,
    *,
    prompt: Callable[[], str] | None = None,
    processor: EventProcessor | None = None,
    reports: ReportFiles | None = None,
) -> ReviewResult:
    """Runs the review end to end; raises only before the thread starts (usage, config).
    `prompt` reads custom instructions from stdin once everything else is checked;
    `processor` replaces stdout/stderr as run_exec's does; `reports` are the report files
    the caller opened (else the request's are opened here, before anything runs)."""
    warn = warn or stderr_warning
    with contextlib.ExitStack() as stack:
        if reports is None:
            reports = _open_reports(request)
            stack.callback(reports.close)
        step_summary = _step_summary(request, warn)
        if step_summary is not None:
            stack.callback(step_summary.close)
        return _review(request, warn, prompt, processor, reports, step_summary)


def _open_reports(request: ReviewRequest) -> ReportFiles:
    base = request.exec
    paths = ReportPaths(
        junit=request.junit,
        sarif=request.sarif,
        markdown=request.markdown,
        diff=base.diff,
        last_message=base.output_last_message,
        untrusted=untrusted_roots(base.cwd, base.add_dirs),
    )
    return open_all_reports(paths)


def _step_summary(request: ReviewRequest, warn: Warn) -> ReportTarget | None:
    """GitHub's step summary file, opened now like every report (before the model runs),
    as exec's is (output/ci)."""
    from oiexec.output.ci import open_step_summary

    base = request.exec
    return open_step_summary(warn, untrusted=untrusted_roots(base.cwd, base.add_dirs))


def _review(
    request: ReviewRequest,
    warn: Warn,
    prompt: Callable[[], str] | None,
    processor: EventProcessor | None,
    reports: ReportFiles,
    step_summary: ReportTarget | None,
) -> ReviewResult:
    base = request.exec
    # The repository under review is the PR's: no git or rg of its own may run (a committed
    # `.venv/bin/git` on PATH), from the first git command on.
    from oiexec.core import programs
    from oiexec.git import find_project_root

    programs.distrust([base.cwd, find_project_root(base.cwd) or base.cwd])
    resolved = _resolve(base.cwd, request.target)
    if not has_changes(resolved.repo_root, request.target):
        return _nothing_to_review(request, resolved, reports, step_summary, warn)
    changed = None if isinstance(request.target, CustomTarget) else _changed(resolved, warn)
    policy = ReviewAnswer(resolved, changed, warn, request.baseline)
    hooks = RunHooks(
        instructions=review_instructions(str(resolved.repo_root)),
        final=policy,
        sandbox_mode="read-only",
        review=True,
    )
    if base.output_schema_file is not None:
        warn("review answers in its own format; ignoring --output-schema")
    # The review's own JUnit (one case per finding) replaces exec's run report.
    exec_request = replace(
        base,
        prompt=resolved.user_message,
        output_schema_file=None,
        output_schema=review_output_json_schema() if request.structured_output else None,
        junit=None,
    )
    run = run_exec(
        exec_request,
        hooks,
        prompt=prompt,
        processor=processor,
        reports=reports.only("last_message", "diff"),
    )
    result = ReviewResult(exit_code=run.exit_code, run=run, fell_back=policy.fell_back)
    if run.exit_code != ExitCode.SUCCESS or policy.review is None:
        reason = run.failure or "the review run ended without a review"
        if run.exit_code == ExitCode.SUCCESS:
            result.exit_code = ExitCode.FAILED
            warn(reason)
        write_review_failure(reports, reason, int(result.exit_code), warn=warn)
        return result
    review = policy.review
    result.review = review
    result.blocking = blocking_findings(review, request.gate)
    _write_reports(request, resolved, review, reports, step_summary, warn, run, policy.comparison)
    if policy.comparison is not None:
        _say(f"review: {policy.comparison.summary()}")
    if policy.fell_back:
        result.exit_code = ExitCode.FAILED
        _say(f"review failed: {FALLBACK_MESSAGE}")
    elif result.blocking:
        result.exit_code = ExitCode.REVIEW_BLOCKED
        _say(_blocked_summary(result.blocking, request.gate))
    else:
        result.exit_code = ExitCode.SUCCESS
    return result


def _nothing_to_review_reason(target: ReviewTarget) -> str:
    if isinstance(target, UncommittedTarget):
        return "there are no uncommitted changes (staged, unstaged or untracked)"
    if isinstance(target, BaseBranchTarget):
        return f"the current branch has no changes against '{target.branch}'"
    if isinstance(target, CommitTarget):
        return f"commit {target.sha} changes no file"
    return "the instructions are empty"


def _nothing_to_review(
    request: ReviewRequest,
    resolved: ResolvedTarget,
    reports: ReportFiles,
    step_summary: ReportTarget | None,
    warn: Warn,
) -> ReviewResult:
    """A pass with empty reports, the model never asked (Codex would ask it anyway)."""
    reason = _nothing_to_review_reason(request.target)
    text = f"Nothing to review: {reason}."
    _say(f"nothing to review: {reason}; passing without asking the model")
    review = ReviewOutput(
        findings=[],
        overall_correctness="patch is correct",
        overall_explanation=text,
        overall_confidence_score=1.0,
    )
    comparison = None
    if request.baseline is not None:
        comparison = _compare(review, request.baseline, resolved.repo_root)
        _say(f"review: {comparison.summary()}")
    _write_reports(request, resolved, review, reports, step_summary, warn, None, comparison)
    # A pass is a completed review: -o gets its text, --diff the empty change.
    save_report(reports.last_message, text, warn)
    save_report(reports.diff, "", warn)
    run = RunResult(
        exit_code=ExitCode.SUCCESS, final_message=text, cost_usd=0.0, session_cost_usd=0.0
    )
    return ReviewResult(exit_code=ExitCode.SUCCESS, run=run, review=review)


def _resolve(cwd: Path, target: ReviewTarget) -> ResolvedTarget:
    try:
        return resolve_target(cwd, target)
    except ReviewTargetError:
        if not isinstance(target, CustomTarget):
            raise
        # Custom instructions need no diff, so they also work outside a git repository
        # (with --skip-git-repo-check); the files are then relative to the working directory.
        hint = target.instructions.strip().splitlines()[0][:80] if target.instructions else ""
        return ResolvedTarget(target, cwd.resolve(), target.instructions, hint or "custom review")


def _changed(resolved: ResolvedTarget, warn: Warn) -> dict[str, set[int]] | None:
    try:
        return changed_lines(resolved.repo_root, resolved.target)
    except ReviewTargetError as exc:
        warn(f"could not list the changed lines; findings are checked against files only: {exc}")
        return None


def _write_reports(
    request: ReviewRequest,
    resolved: ResolvedTarget,
    review: ReviewOutput,
    reports: ReportFiles,
    step_summary: ReportTarget | None,
    warn: Warn,
    run: RunResult | None = None,
    comparison: BaselineComparison | None = None,
) -> None:
    """Each failure a warning: a report must not turn a finished review into a crash.
    `run`: the review's run, whose tokens and cost the reports give (none: nothing ran);
    `comparison`: against `--baseline`, whose absent results only SARIF lists."""
    from oiexec.core.costs import show_usd
    from oiexec.output.ci import in_github_actions
    from oiexec.output.junit import spend_properties
    from oiexec.review.render.github import write_annotations
    from oiexec.review.render.junit import render_junit
    from oiexec.review.render.markdown import render_markdown

    gate, title, show = request.gate, resolved.user_facing_hint, request.show_unchanged
    run = run or RunResult(exit_code=ExitCode.SUCCESS, cost_usd=0.0, session_cost_usd=0.0)
    if reports.junit is not None:
        spent = spend_properties(run.usage, run.cost_usd, run.session_cost_usd)
        junit = render_junit(review, policy=gate, properties=spent, show_unchanged=show)
        save_report(reports.junit, junit, warn)
    if reports.sarif is not None:
        absent = comparison.absent if comparison is not None else ()
        save_report(reports.sarif, _sarif(review, resolved.repo_root, gate, absent), warn)
    markdown = render_markdown(review, policy=gate, title=title, show_unchanged=show)
    if reports.markdown is not None:
        save_report(reports.markdown, markdown, warn)
    if in_github_actions():
        if step_summary is not None:
            summary = markdown.rstrip("\n") + f"\n\nReview cost: {show_usd(run.cost_usd)}\n"
            save_report(step_summary, summary, warn)
        # Workflow commands on stderr: stdout belongs to the JSONL stream or the review text.
        write_annotations(sys.stderr, review, gate, show_unchanged=show)


def _sarif(
    review: ReviewOutput, root: Path, gate: GatePolicy, absent: Sequence[BaselineResult]
) -> str:
    from oiexec.review.render.sarif import render_failure_sarif, sarif_text

    if review.is_fallback:
        # No results would tell code scanning every earlier alert was fixed: report the
        # analysis as failed instead.
        return render_failure_sarif(FALLBACK_MESSAGE, int(ExitCode.FAILED))
    return sarif_text(review, repo_root=root, policy=gate, absent=absent)


def _compare(review: ReviewOutput, baseline: Baseline, root: Path) -> BaselineComparison:
    from oiexec.review.baseline import compare

    return compare(review, baseline, root)


def _blocked_summary(blocking: list[ReviewFinding], gate: GatePolicy) -> str:
    lines = [
        f"review gate blocked: {len(blocking)} finding(s) at or above P{gate.fail_on}"
        + (f" with confidence >= {gate.min_confidence:g}" if gate.min_confidence else "")
    ]
    for finding in blocking:
        span = finding.code_location.line_range
        lines.append(
            f"  {priority_label(finding)} {finding.display_path}:{span.start}-{span.end} "
            f"{finding.title}"
        )
    return "\n".join(lines)


def _say(text: str) -> None:
    sys.stderr.write(redact(text) + "\n")
    sys.stderr.flush()
