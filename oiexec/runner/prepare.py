"""Everything a run checks before it reads its prompt or starts its thread: config, git check,
output schema, provider and API key, images, sandbox policy and backend, budgets.

The prompt is not needed for any of it, so a bad flag or config fails at once instead of
after a slow stdin closes (`sleep 4 | interpreter exec -c model=123 x`). Warnings found on
the way are kept in order in `StartupWarnings`: the run shows them after `thread.started`,
and a failure before that prints them first, so the cause is seen with the symptom.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oiexec.agent.final import FinalAnswerPolicy
from oiexec.catalog.facts import ModelFacts, PendingFacts
from oiexec.config.effects import RunFacts, no_effect_notes
from oiexec.config.loader import LoadedConfig
from oiexec.config.oss import check_local_server
from oiexec.config.permissions import IN_PROCESS_READERS, refuse_unenforceable
from oiexec.config.providers import resolve_api_key, resolve_provider
from oiexec.config.settings import ProviderConfig, Settings
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.policy import SandboxMode, SandboxPolicy
from oiexec.core.redact import register_secret
from oiexec.core.types import ImageInput
from oiexec.git import is_git_marker
from oiexec.harness.instructions import Instructions
from oiexec.runner.command_rules import load_command_rules
from oiexec.runner.fallbacks import Fallback, resolve_fallbacks
from oiexec.runner.inputs import read_images, read_output_schema
from oiexec.runner.policy import RefusalTracker, add_dir_warnings, run_policy
from oiexec.runner.programs import trust_run_programs
from oiexec.runner.reports import stderr_warning
from oiexec.runner.request import ExecRequest
from oiexec.runner.sessions import SettingChange, resolve_run_config, setting_changes
from oiexec.runner.signals import deadline_alarm
from oiexec.sandbox.selfguard import protect_runner

if TYPE_CHECKING:
    from oiexec.core.context import CommandRules
    from oiexec.runner.from_junit import Failures
    from oiexec.session.index import LoadedSession

__all__ = ["GIT_CHECK_MESSAGE", "Prepared", "RunHooks", "StartupWarnings", "prepare"]

GIT_CHECK_MESSAGE = "Not inside a trusted directory and --skip-git-repo-check was not specified."


@dataclass(frozen=True)
class RunHooks:
    """How a caller specialises a run (the review command uses all three)."""

    #: Replaces the harness's instructions.
    instructions: str | None = None
    #: Decides what a valid final answer is and how it is shown.
    final: FinalAnswerPolicy | None = None
    #: Forces a sandbox mode whatever config and flags say.
    sandbox_mode: SandboxMode | None = None
    #: Run with `review_model` when config sets it (and `-m` does not name a model).
    review: bool = False


@dataclass
class StartupWarnings:
    """Warnings collected before the thread starts, shown exactly once: by the run after
    `thread.started` (as `error` items with --json), or on stderr before a startup error."""

    texts: list[str] = field(default_factory=list)
    shown: bool = False
    #: Keys accepted with no effect (oiexec.config.effects) and unknown `OIEXEC_` variables:
    #: stderr and the run log only, never an `error` item, so a Codex SDK user's items
    #: match Codex's.
    notes: list[str] = field(default_factory=list)

    def add(self, *texts: str) -> None:
        self.texts.extend(texts)

    def take(self) -> list[str]:
        """The warnings, for the run to show; marks them shown."""
        self.shown = True
        return list(self.texts)

    def take_notes(self) -> list[str]:
        """The no-effect notes, for the run to show on stderr and in its log."""
        self.shown = True
        return list(self.notes)

    def flush(self) -> None:
        """Prints what has not been shown yet on stderr (before the error that ends the run)."""
        if self.shown:
            return
        self.shown = True
        for text in [*self.texts, *self.notes]:
            stderr_warning(text)


@dataclass(frozen=True)
class Prepared:
    """Everything checked before the thread starts."""

    request: ExecRequest
    hooks: RunHooks
    config: LoadedConfig
    provider_id: str
    provider: ProviderConfig
    api_key: str | None
    images: tuple[ImageInput, ...]
    output_schema: dict[str, Any] | None
    policy: SandboxPolicy
    #: The sandbox backend for `policy`, probed now so an unusable one is reported up front.
    sandbox: RefusalTracker
    #: The model's context window and price (config, else the catalog), perhaps still being
    #: looked up (`facts`).
    pending_facts: PendingFacts
    #: When the run started (`--timeout` counts from here): before config was read, so the
    #: limit covers the whole run, a slow stdin included.
    started: float = 0.0
    #: The session a resume or fork continues.
    continued: LoadedSession | None = None
    #: Where this run differs from the continued session's (announced and recorded).
    changes: tuple[SettingChange, ...] = ()
    #: The harness chosen for the run's settings, or why none can be (see `harness_id`).
    harness_choice: str | ConfigError | None = None
    #: The user's base and developer instructions (runner/instructions.py).
    instructions: Instructions = field(default_factory=Instructions)
    #: The command rules every model command is judged by (runner/command_rules.py).
    command_rules: CommandRules | None = None
    #: `model_fallbacks`, checked (runner/fallbacks.py).
    fallbacks: tuple[Fallback, ...] = ()
    #: `--from-junit`: what the reports say failed (runner/from_junit.py).
    failures: Failures | None = None

    @property
    def harness_id(self) -> str | None:
        """The run's harness, chosen once in `prepare` (None for a `Prepared` made without
        it: the harness is then chosen from the settings when it is built). One that cannot
        be chosen raises its `ConfigError` here, when the run builds its harness."""
        if isinstance(self.harness_choice, ConfigError):
            raise self.harness_choice
        return self.harness_choice

    @property
    def facts(self) -> ModelFacts:
        """The model's context window and price; waits for a look-up still under way."""
        return self.pending_facts.result()

    @property
    def deadline(self) -> float | None:
        """When `--timeout` runs out (monotonic clock), if it is set."""
        timeout = self.request.timeout
        return self.started + timeout if timeout else None

    def with_prompt(self, read: Callable[[], str] | None) -> Prepared:
        """Ready to run: the prompt read now (stdin), when `read` is given. `--timeout` counts
        the read: a stdin that never ends is cut off at the deadline (`RunTimedOut`). With
        `--from-junit` the failing tests are added to it here, the one place a prompt is
        completed, whoever read it."""
        if read is None and self.failures is None:
            return self
        prompt = self.request.prompt
        if read is not None:
            with deadline_alarm(self.deadline):
                prompt = read()
        if self.failures is not None:
            from oiexec.runner.from_junit import compose_prompt

            prompt = compose_prompt(prompt, self.failures)
        return dataclasses.replace(self, request=dataclasses.replace(self.request, prompt=prompt))


def _add_config_warnings(warnings: StartupWarnings, texts: list[str], notes: list[str]) -> None:
    """Config's warnings not yet collected: its notes (an unknown `OIEXEC_` variable) as
    notes, for stderr and the run log only; the rest as warnings (`error` items)."""
    for text in texts:
        if text in warnings.texts or text in warnings.notes:
            continue
        if text in notes:
            warnings.notes.append(text)
        else:
            warnings.add(text)


def prepare(request: ExecRequest, hooks: RunHooks, warnings: StartupWarnings) -> Prepared:
    """Checks everything that does not need the prompt; raises `OiexecError` (usage, config,
    session) on the first problem, with the warnings found so far in `warnings`."""
    started = time.monotonic()
    warnings.add(*request.warnings)
    found: list[str] = []
    try:
        # The run's settings, resolved once: a resumed or forked session's are a layer of it.
        request, config, continued = resolve_run_config(request, found)
    except BaseException:
        # Kept when loading fails too: the error is printed after what led to it.
        warnings.add(*found)
        raise
    _add_config_warnings(warnings, found, config.notes)
    if hooks.review:
        _use_review_model(config, request)
    _check_git(request, config)
    output_schema = request.output_schema
    if request.output_schema_file is not None:
        output_schema = read_output_schema(request.output_schema_file)
    provider_id, provider = resolve_provider(config.settings)
    # Looked up when the run needs them (--max-cost now; the window once the history grows),
    # in the catalog probe: a cold catalog costs ~0.3 s of CPU and 15 MiB a short run skips.
    facts = PendingFacts(config.settings, provider_id)
    harness = choose_harness(config.settings, provider_id, provider)
    warnings.notes.extend(
        no_effect_notes(
            config.settings,
            config.layers,
            config.ignored,
            _facts_for(harness, provider),
            strict=request.config.strict,
        )
    )
    api_key = resolve_api_key(provider_id, provider)
    register_secret(api_key)
    check_local_server(provider_id, provider)
    fallbacks = resolve_fallbacks(
        config, provider_id, harness if isinstance(harness, str) else None
    )
    # Before any command runs: the keys must not be readable from this process by them.
    protect_runner([provider.env_key or "", *(f.provider.env_key or "" for f in fallbacks)])
    images = read_images(request.images)
    rules = load_command_rules(config, ignore=request.ignore_rules, warnings=warnings.texts)
    policy = run_policy(config, request, trusted=config.trusted)
    if hooks.sandbox_mode:
        policy = dataclasses.replace(policy, mode=hooks.sandbox_mode)
    warnings.add(*add_dir_warnings(policy, request.add_dirs))
    failures = None
    if request.from_junit:
        if hooks.final is not None:
            raise UsageError("--from-junit applies to `exec` runs only, not to a review")
        from oiexec.runner.from_junit import seed_run

        request, failures = seed_run(request, policy, config.settings.check)
    instructions = _instructions(config, request, policy, hooks, warnings)
    # Before the model runs: git and rg found once, outside every root it can write.
    trust_run_programs(policy, config.settings.program_paths)
    changes: list[SettingChange] = []
    if continued is not None:
        changes = setting_changes(
            continued.settings,
            request=request,
            config=config,
            provider_id=provider_id,
            policy=policy,
            output_schema=output_schema,
            forced_mode=hooks.sandbox_mode is not None,
        )
    if request.max_cost is not None:
        known = facts.result()
        if known.price is None:
            raise ConfigError(
                f"--max-cost needs a price for model `{config.settings.model}`, and none is known",
                hint="give one: -c model_pricing.input_per_mtok=N "
                "-c model_pricing.output_per_mtok=N",
            )
        # Where a price is spent, say if it is borrowed or a base rate.
        warnings.add(*known.price_notes)
    from oiexec.sandbox import get_sandbox

    # Last: the backend holds resources the run closes, and nothing after it can fail.
    sandbox = RefusalTracker(get_sandbox(policy))
    try:
        refuse_unenforceable(policy, sandbox.backend, _reading_tools(harness))
    except ConfigError:
        sandbox.close()
        raise
    warnings.add(*_sandbox_warnings(sandbox, policy))
    return Prepared(
        request, hooks, config, provider_id, provider, api_key, images, output_schema, policy,
        sandbox, facts, started=started, continued=continued, changes=tuple(changes),
        harness_choice=harness, instructions=instructions, command_rules=rules,
        fallbacks=fallbacks, failures=failures,
    )  # fmt: skip


def _instructions(
    config: LoadedConfig,
    request: ExecRequest,
    policy: SandboxPolicy,
    hooks: RunHooks,
    warnings: StartupWarnings,
) -> Instructions:
    """The user's instructions, read now so that a bad file fails before the prompt is read;
    what they replace is a note (stderr and the run log, not an `error` item)."""
    settings = config.settings
    if not (
        settings.model_instructions_file
        or settings.developer_instructions
        or request.append_system_prompt
    ):
        return Instructions()
    from oiexec.runner.instructions import run_instructions

    instructions, notes = run_instructions(
        config,
        request.cwd,
        policy,
        appended=request.append_system_prompt,
        review=hooks.instructions is not None,
    )
    warnings.notes.extend(notes)
    return instructions


def _use_review_model(config: LoadedConfig, request: ExecRequest) -> None:
    """`review_model` is the model a review runs with, as in Codex; `-m` on the review's own
    command line is more explicit still and wins."""
    review_model = config.settings.review_model
    if review_model is None or request.config.flags.get("model") is not None:
        return
    config.settings = config.settings.model_copy(update={"model": review_model})
    config.origins["model"] = f"review_model: {config.origins.get('review_model', '?')}"


def choose_harness(
    settings: Settings, provider_id: str, provider: ProviderConfig
) -> str | ConfigError:
    """The run's harness, chosen once from its settings; a harness that cannot be chosen
    (unknown, or not for the provider's wire) is the error the run stops on where it always
    has, when it builds the harness (`Prepared.harness_id`), so it is kept until then."""
    from oiexec.harness.select import choose_harness_id

    try:
        return choose_harness_id(settings.harness, settings.model, provider_id, provider)
    except ConfigError as exc:
        return exc


def _reading_tools(harness: str | ConfigError) -> list[str]:
    """The harness's tools that read files in the runner process (outside the sandbox)."""
    from oiexec.harness.data import load_spec

    if isinstance(harness, ConfigError):
        return []  # the run stops on this where it always has
    tools = load_spec(harness).tools
    return [tool.name for tool in tools if tool.impl in IN_PROCESS_READERS]


def run_facts(settings: Settings, provider_id: str, provider: ProviderConfig) -> RunFacts:
    """What decides whether the run-dependent keys take effect (`web_search`)."""
    return _facts_for(choose_harness(settings, provider_id, provider), provider)


def _facts_for(harness: str | ConfigError, provider: ProviderConfig) -> RunFacts:
    from oiexec.harness.web_search import web_search_supported

    if isinstance(harness, ConfigError):
        # The run stops on this later, where it always has; nothing to report before that.
        return RunFacts(web_search_supported=True)
    return RunFacts(web_search_supported=web_search_supported(harness, provider.wire_api))


def _sandbox_warnings(tracker: RefusalTracker, policy: SandboxPolicy) -> list[str]:
    """A degraded backend (Landlock instead of bwrap) is allowed, but never silently; an
    unavailable one is announced before anything runs."""
    info = tracker.describe()
    fixes = [str(f) for f in info.get("remediation") or []]
    fix = f". Fix: {fixes[0]}" if fixes else ""
    if info.get("backend") == "unavailable":
        # Every fix: the right one depends on where this runs (a host, Ubuntu, a container).
        fix = ". Fixes: " + " | ".join(fixes) if fixes else ""
        return [
            f"sandbox unavailable for `{policy.mode}`: {info.get('reason')}; "
            f"commands will be refused and the run will exit 6{fix}"
        ]
    degraded = [str(d) for d in info.get("degraded") or []]
    if not degraded or info.get("backend") == "none":
        return []
    return [f"sandbox degraded ({info.get('backend')}): " + "; ".join(degraded) + fix]


def _check_git(request: ExecRequest, config: LoadedConfig) -> None:
    if request.skip_git_repo_check or request.dangerously_bypass:
        return
    if not is_git_marker(config.project_root / ".git"):
        raise UsageError(
            GIT_CHECK_MESSAGE,
            hint="Run inside a git repository, or pass --skip-git-repo-check.",
        )
