"""Layered configuration: which source sets what, merged deeply, with the origin of every key.

Layers, lowest first: built-in defaults, `$OPENINTERPRETER_HOME/config.toml`, the profile
(`[profiles.NAME]` in the user config, then `NAME.config.toml` in the home), the project's
`.openinterpreter/config.toml` (only when the project is trusted), the environment
(`OPENINTERPRETER_<KEY>`, then `OIEXEC_<KEY>`; see `oiexec.config.environment`), the
session a resume or fork continues (what its run was made with; its harness only while the
model and provider stay the session's), `-c` overrides, dedicated flags, then the values exec
forces (`approval_policy = "never"`). A run reads them once (runner/sessions).

The profile is chosen by `--profile`, else `OIEXEC_PROFILE` / `OPENINTERPRETER_PROFILE`, else
the user config's `profile`. Trust is read from the user config only: the project cannot
vouch for itself, and the other layers come too late to decide which files are read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config.effects import FORCED_LAYER, IgnoredKey, unknown_features
from oiexec.config.environment import default_home, environment_layers
from oiexec.config.layers import (
    Layer,
    Origins,
    deep_merge,
    layer_of,
    nest_dotted,
    read_toml_layer,
)
from oiexec.config.oss import DEFAULT_OSS_MODELS
from oiexec.config.overrides import nest, parse_override
from oiexec.config.problems import check_overridden, validate_settings
from oiexec.config.settings import Settings
from oiexec.config.unknown import set_aside_unknown
from oiexec.core.errors import ConfigError, UsageError
from oiexec.git import find_project_root

PROJECT_DIR = ".openinterpreter"
#: Codex's variable for the built-in `openai` provider's base URL; any `openai_base_url` in
#: config wins over it.
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
#: How the user spells each dedicated flag, for messages about its value.
_FLAG_NAMES = {"model": "-m/--model", "model_provider": "--local-provider", "sandbox_mode": "-s"}


@dataclass
class LoadedConfig:
    settings: Settings
    #: dotted key -> human description of the layer that set it
    origins: MutableMapping[str, str]
    warnings: list[str]
    home: Path
    project_root: Path
    trusted: bool
    layers: list[Layer] = field(default_factory=list)
    #: Keys Codex's config knows and oiexec does not model: no effect, reported as such.
    ignored: list[IgnoredKey] = field(default_factory=list)
    #: The warnings (also in `warnings`) that are notes: an `OIEXEC_` variable naming no key.
    #: A run shows them on stderr and in its log, never as an `error` item, so a Codex SDK
    #: consumer does not see an error for a variable in its CI environment.
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ConfigInputs:
    """What the command line contributes to configuration."""

    cwd: Path
    profile: str | None = None
    overrides: tuple[str, ...] = ()
    flags: dict[str, Any] = field(default_factory=dict)
    #: Above every layer. Every run oiexec makes is headless, so the approval policy is always
    #: `never` (as Codex's exec forces it): nobody is there to approve.
    forced: dict[str, Any] = field(default_factory=lambda: {"approval_policy": "never"})
    strict: bool = False
    #: Dotted keys restored from the session being resumed or forked: above the files and
    #: the environment (the run is continued as it was made), below `-c`, flags and what a
    #: `--profile` given now sets.
    session: dict[str, Any] = field(default_factory=dict)
    #: How `config show --origins` and messages name the session layer.
    session_origin: str = "session"
    #: The model and provider the session's run was made with (None: not recorded). The
    #: session's `harness` stands only while the run keeps both: a harness is made for a
    #: model family, so a model or provider given now chooses it again.
    session_made_with: tuple[str | None, str | None] = (None, None)


def load_config(
    inputs: ConfigInputs,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    warnings: list[str] | None = None,
) -> LoadedConfig:
    """The effective settings; `home` and `environ` default to the process's own. Warnings
    go to `warnings` as they are found, so a caller still has them when loading then fails."""
    environ = os.environ if environ is None else environ
    home = home or default_home(environ)
    warnings = [] if warnings is None else warnings
    user = read_toml_layer("user", home / "config.toml")
    user_data = user.data if user else {}
    env_layers = environment_layers(environ)
    cli = _override_table(inputs.overrides)
    # `-c profile=X` selects the profile as in Codex (whose `-c` sets the same top-level key
    # `--profile` reads); `--profile` wins over it, as it does over the config's `profile`.
    given_now = inputs.profile or _override_profile(cli)
    profile_name = given_now or _env_profile(env_layers) or user_data.get("profile")
    profile = _profile_layers(str(profile_name), home, user) if profile_name else []

    project_root = find_project_root(inputs.cwd) or inputs.cwd
    trusted = _is_trusted(user_data, project_root, inputs.cwd)
    project = _project_layer(project_root, trusted, home, warnings)
    layers = [
        *([user] if user else []),
        *profile,
        *([project] if project else []),
        *env_layers,
        *_session_layer(inputs, profile if given_now else []),
        *_command_line_layers(inputs, cli),
    ]
    layers = _session_harness(layers, inputs)
    layers = _openai_base_url_layer(environ, layers) + layers
    layers, untrusted = _without_borrowed_trust(layers, project_root, trusted, home)
    warnings.extend(untrusted)

    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer.data)
    ignored, unknown, notes = set_aside_unknown(merged, layers, strict=inputs.strict)
    warnings.extend(unknown)

    settings = validate_settings(merged, layers)
    check_overridden(merged, layers, _checked(layers, inputs), _FLAG_NAMES)
    warnings.extend(unknown_features(settings, layers))
    warnings.extend(_home_in_workspace(home, inputs.cwd, project_root, settings))
    return LoadedConfig(
        settings,
        Origins(layers),
        warnings,
        home,
        project_root,
        trusted,
        layers,
        ignored=ignored,
        notes=notes,
    )


def _override_table(overrides: tuple[str, ...]) -> dict[str, Any]:
    """The `-c key=value` overrides as one table, later ones winning."""
    cli: dict[str, Any] = {}
    for text in overrides:
        key_path, value = parse_override(text)
        cli = deep_merge(cli, nest(key_path, value))
    return cli


def _project_layer(
    project_root: Path, trusted: bool, home: Path, warnings: list[str]
) -> Layer | None:
    """The project's config file, when it is read: a trusted project's, not through a link."""
    project_file = project_root / PROJECT_DIR / "config.toml"
    project = read_toml_layer("project", project_file)
    if project is None:
        return None
    if through_symlink(project_root, project_file):
        # The sandbox guards `.openinterpreter` itself, not where a link sends it: a linked
        # project config may have been (re)written by a previous run's commands.
        warnings.append(
            f"ignored {project_file}: it is reached through a symbolic link, which the "
            "sandbox cannot keep read-only; make .openinterpreter a real directory"
        )
        return None
    if not trusted:
        warnings.append(
            f"ignored {project.path}: the project is not trusted. Trust it by adding "
            f'[projects."{project_root}"] trust_level = "trusted" to {home / "config.toml"}'
        )
        return None
    return project


def _session_layer(inputs: ConfigInputs, chosen_now: list[Layer]) -> list[Layer]:
    """The continued session's settings, without what a `--profile` given now sets: that
    profile is given now, like a flag, so it overrides the session."""
    session = {
        key: value
        for key, value in inputs.session.items()
        if not any(layer_of([layer], key.split(".")) for layer in chosen_now)
    }
    return [Layer(inputs.session_origin, nest_dotted(session))] if session else []


def _command_line_layers(inputs: ConfigInputs, cli: dict[str, Any]) -> list[Layer]:
    """`-c` overrides, `--oss`'s default model, the dedicated flags, the forced values."""
    layers = [Layer("-c override", cli)] if cli else []
    flags = _flag_values(inputs.flags)
    local = flags.get("model_provider")
    if local in DEFAULT_OSS_MODELS and "model" not in flags and "model" not in cli:
        # `--oss` without `-m`: the local provider's default open model, as Codex does
        # (Codex also lets it beat `-c model=...`; a model named on the command line wins).
        layers.append(Layer("--oss default", {"model": DEFAULT_OSS_MODELS[local]}))
    if flags:
        layers.append(Layer("command-line flag", nest_dotted(flags)))
    if inputs.forced:
        layers.append(Layer(FORCED_LAYER, nest_dotted(inputs.forced)))
    return layers


def _session_harness(layers: list[Layer], inputs: ConfigInputs) -> list[Layer]:
    """The layers without the session's `harness` when the run's model or provider is no
    longer the session's (a flag, `-c` or a profile given now changed it): that harness was
    made for another model, so it is chosen again."""
    owner = layer_of(layers, ["harness"])
    if owner is None or owner.name != inputs.session_origin or not inputs.session:
        return layers
    model, provider = inputs.session_made_with
    changed = (model is not None and _effective(layers, "model") != model) or (
        provider is not None and _effective(layers, "model_provider") != provider
    )
    if not changed:
        return layers
    kept = {key: value for key, value in owner.data.items() if key != "harness"}
    return [
        dataclasses.replace(layer, data=kept) if layer is owner else layer
        for layer in layers
        if layer is not owner or kept
    ]


def _effective(layers: list[Layer], key: str) -> Any:
    """A top-level key's value as the layers set it, else its default."""
    owner = layer_of(layers, [key])
    return owner.data[key] if owner else Settings.model_fields[key].default


# --- layers ------------------------------------------------------------------------------


def _checked(layers: list[Layer], inputs: ConfigInputs) -> list[Layer]:
    """The layers whose overridden values are checked too (config/problems): what the user
    wrote, not the session a resume restores (what its run was made with; replacing a value
    there is how a resume is changed) nor the values oiexec supplies itself, nor
    `OPENAI_BASE_URL`, which is set for other tools too and yields to the config's key."""
    supplied = {inputs.session_origin, "--oss default", FORCED_LAYER}
    return [
        layer
        for layer in layers
        if layer.name not in supplied
        and layer.variables.get(("openai_base_url",)) != OPENAI_BASE_URL_ENV
    ]


def _openai_base_url_layer(environ: Mapping[str, str], layers: list[Layer]) -> list[Layer]:
    """`OPENAI_BASE_URL` as Codex read it: the built-in `openai` provider's base URL, below
    every config file (a config's `openai_base_url` wins). Empty counts as unset. Read only
    when the run uses that provider: the variable is often set for other tools, and must not
    stop a run on another provider."""
    value = environ.get(OPENAI_BASE_URL_ENV, "").strip()
    owner = layer_of(layers, ["model_provider"])
    provider = (
        owner.data["model_provider"] if owner else Settings.model_fields["model_provider"].default
    )
    if not value or provider != "openai":
        return []
    variables: dict[tuple[str, ...], str] = {("openai_base_url",): OPENAI_BASE_URL_ENV}
    return [Layer("environment", {"openai_base_url": value}, variables=variables)]


def _flag_values(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The flags given; an empty value is a usage error (`-m ""`), not a setting."""
    given = {key: value for key, value in flags.items() if value is not None}
    for key, value in given.items():
        if isinstance(value, str) and not value.strip():
            flag = _FLAG_NAMES.get(key, key)
            raise UsageError(
                f"{flag} needs a value, got an empty string",
                hint="Give one (e.g. -m gpt-5.5), or leave the flag out to use the config's.",
            )
    return given


def _without_borrowed_trust(
    layers: list[Layer], project_root: Path, trusted: bool, home: Path
) -> tuple[list[Layer], list[str]]:
    """Layers without the `projects.*.trust_level` values set outside the user config, and a
    warning for each: trust decides which files are read and how much the sandbox allows, so
    only the user's own config may grant it (`-c`, a profile or the project cannot)."""
    kept: list[Layer] = []
    warnings: list[str] = []
    state = "trusted" if trusted else "untrusted"
    for layer in layers:
        projects = layer.data.get("projects")
        if layer.name == "user" or not isinstance(projects, dict):
            kept.append(layer)
            continue
        trimmed: dict[str, Any] = {}
        for path, entry in projects.items():
            if isinstance(entry, dict) and "trust_level" in entry:
                where = layer.where(["projects", path, "trust_level"])
                warnings.append(
                    f'ignoring projects."{path}".trust_level from {where}: only '
                    f"{home / 'config.toml'} can trust a project; {project_root} stays {state}"
                )
                entry = {k: v for k, v in entry.items() if k != "trust_level"}
            if entry or not isinstance(entry, dict):
                trimmed[path] = entry
        data = (
            {**layer.data, "projects": trimmed}
            if trimmed
            else {k: v for k, v in layer.data.items() if k != "projects"}
        )
        kept.append(dataclasses.replace(layer, data=data))
    return kept, warnings


def _override_profile(cli: dict[str, Any]) -> str | None:
    """The profile `-c profile=NAME` names; a value that cannot name one is a config error
    here, before it is looked up (`-c profile=1` is not the profile `1`)."""
    name = cli.get("profile")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"`profile` in -c override: expected a profile name, got {name!r}",
            hint="Use -c profile=NAME (or -p NAME) with a [profiles.NAME] table or "
            "NAME.config.toml in the oiexec home.",
        )
    return name


def _env_profile(env_layers: list[Layer]) -> str | None:
    """`OIEXEC_PROFILE`, else `OPENINTERPRETER_PROFILE` (the layers come lowest first)."""
    named = [str(layer.data["profile"]) for layer in env_layers if "profile" in layer.data]
    return named[-1] if named else None


def through_symlink(root: Path, path: Path) -> bool:
    """Whether any component of `path` below `root` is a symbolic link (a project file read
    through one is ignored: the sandbox keeps the project's own `.openinterpreter` read-only,
    not a directory a link sends it to, which a background command can swap)."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


def _home_in_workspace(home: Path, cwd: Path, project_root: Path, settings: Settings) -> list[str]:
    """A warning when commands could write the home: its config.toml and hooks.json are read
    by the next run, whose hooks, notify and MCP servers run outside the sandbox. Only a
    `.openinterpreter` directly under a writable root is kept read-only by the sandbox."""
    if settings.sandbox_mode != "workspace-write":
        return []
    real = Path(os.path.realpath(home))
    for root in {Path(os.path.realpath(cwd)), Path(os.path.realpath(project_root))}:
        if (root == real or root in real.parents) and real != root / PROJECT_DIR:
            return [
                f"the oiexec home {home} is inside the workspace {root}: commands can rewrite "
                "its config.toml and hooks.json, which later runs read and act on outside the "
                "sandbox; set OPENINTERPRETER_HOME to a directory outside the workspace"
            ]
    return []


def _profile_layers(name: str, home: Path, user: Layer | None) -> list[Layer]:
    if "\0" in name or not name.strip():
        # `profile = "a\u0000"` in a file: no file name can hold it (and the lookup of
        # NAME.config.toml would fail on it).
        raise ConfigError(
            f"profile name {name!r} is not a name",
            hint="Name a [profiles.NAME] table or a NAME.config.toml in the oiexec home.",
        )
    layers: list[Layer] = []
    table = (user.data.get("profiles") or {}).get(name) if user else None
    if table is not None:
        if not isinstance(table, dict):
            raise ConfigError(f"[profiles.{name}] in {user.path if user else '?'} is not a table")
        layers.append(
            Layer(
                f"profile {name}",
                table,
                user.path if user else None,
                user.text if user else None,
                ("profiles", name),
            )
        )
    file_layer = read_toml_layer(f"profile {name}", home / f"{name}.config.toml")
    if file_layer:
        layers.append(file_layer)
    if not layers:
        raise ConfigError(
            f"profile `{name}` not found",
            hint=f"Define [profiles.{name}] in {home / 'config.toml'} or create "
            f"{home / f'{name}.config.toml'}.",
        )
    return layers


def _is_trusted(user_data: dict[str, Any], project_root: Path, cwd: Path) -> bool:
    projects = user_data.get("projects") or {}
    if not isinstance(projects, dict):
        return False
    for path in {project_root, cwd, project_root.resolve(), cwd.resolve()}:
        entry = projects.get(str(path))
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False
