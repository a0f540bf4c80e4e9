"""Layered configuration: which source sets what, merged deeply, with the origin of every key.

Layers, lowest first: built-in defaults, `$OPENINTERPRETER_HOME/config.toml`, the profile
(`[profiles.NAME]` in the user config, then `NAME.config.toml` in the home), the project's
`.openinterpreter/config.toml` (only when the project is trusted), the environment
(`OPENINTERPRETER_<KEY>`, then `OIEXEC_<KEY>`; see `oiexec.config.environment`), the
session a resume or fork continues (what its run was made with), `-c` overrides, dedicated
flags, then the values exec forces (`approval_policy = "never"`).

The profile is chosen by `--profile`, else `OIEXEC_PROFILE` / `OPENINTERPRETER_PROFILE`, else
the user config's `profile`. Trust is read from the user config only: the project cannot
vouch for itself, and the other layers come too late to decide which files are read.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from oiexec.config.codex_schema import codex_knows
from oiexec.config.effects import FORCED_LAYER, IgnoredKey, unknown_features
from oiexec.config.environment import default_home, environment_layers
from oiexec.config.envtext import without_none
from oiexec.config.layers import (
    Layer,
    Origins,
    deep_merge,
    layer_of,
    leaf_paths,
    nest_dotted,
    read_toml_layer,
)
from oiexec.config.oss import DEFAULT_OSS_MODELS
from oiexec.config.overrides import nest, parse_override
from oiexec.config.problems import REPORTED, check_overridden, validate_settings
from oiexec.config.settings import Settings
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
    layers: list[Layer] = []

    user = read_toml_layer("user", home / "config.toml")
    if user:
        layers.append(user)
    user_data = user.data if user else {}

    env_layers = environment_layers(environ)
    cli: dict[str, Any] = {}
    for text in inputs.overrides:
        key_path, value = parse_override(text)
        cli = deep_merge(cli, nest(key_path, value))
    # `-c profile=X` selects the profile as in Codex (whose `-c` sets the same top-level key
    # `--profile` reads); `--profile` wins over it, as it does over the config's `profile`.
    given_now = inputs.profile or _override_profile(cli)
    profile_name = given_now or _env_profile(env_layers) or user_data.get("profile")
    chosen_now: list[Layer] = []
    if profile_name:
        profile_layers = _profile_layers(str(profile_name), home, user)
        layers.extend(profile_layers)
        if given_now:
            chosen_now = profile_layers

    project_root = find_project_root(inputs.cwd) or inputs.cwd
    trusted = _is_trusted(user_data, project_root, inputs.cwd)
    project_file = project_root / PROJECT_DIR / "config.toml"
    project = read_toml_layer("project", project_file)
    if project and through_symlink(project_root, project_file):
        # The sandbox guards `.openinterpreter` itself, not where a link sends it: a linked
        # project config may have been (re)written by a previous run's commands.
        warnings.append(
            f"ignored {project_file}: it is reached through a symbolic link, which the "
            "sandbox cannot keep read-only; make .openinterpreter a real directory"
        )
        project = None
    if project and trusted:
        layers.append(project)
    elif project:
        warnings.append(
            f"ignored {project.path}: the project is not trusted. Trust it by adding "
            f'[projects."{project_root}"] trust_level = "trusted" to {home / "config.toml"}'
        )
    layers.extend(env_layers)
    if inputs.session:
        # `--profile` is given now, like a flag: what it sets overrides the session.
        session = {
            key: value
            for key, value in inputs.session.items()
            if not any(layer_of([layer], key.split(".")) for layer in chosen_now)
        }
        if session:
            layers.append(Layer(inputs.session_origin, nest_dotted(session)))

    if cli:
        layers.append(Layer("-c override", cli))
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

    layers = _openai_base_url_layer(environ, layers) + layers
    layers, untrusted = _without_borrowed_trust(layers, project_root, trusted, home)
    warnings.extend(untrusted)

    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer.data)

    ignored: list[IgnoredKey] = []
    unknown: list[tuple[str, Layer | None, list[str]]] = []
    for key_path in unknown_keys(Settings, merged):
        dotted = ".".join(key_path)
        owner = layer_of(layers, key_path)
        if key_path[0] == "permissions":
            where = owner.where(key_path) if owner else "?"
            # A profile's rule set aside would be a sandbox rule dropped: never a warning.
            raise ConfigError(
                f"unknown key `{dotted}` in permission profile ({where})",
                hint="A profile takes description, extends, filesystem, network and "
                "workspace_roots; fix the key so no rule is lost.",
            )
        if codex_knows(key_path):
            # Codex's key, not a typo: reported as having no effect (oiexec.config.effects),
            # each value a table holds by its own key, as a user would look it up.
            for leaf in _leaves_at(merged, key_path):
                ignored.append(IgnoredKey(tuple(leaf), layer_of(layers, leaf) or owner))
            _delete_path(merged, key_path)
            continue
        if inputs.strict and owner is not None and owner.persistent:
            raise ConfigError(
                f"unknown config key `{dotted}` in {owner.where(key_path)}",
                hint="Remove it, or drop --strict-config to only warn about unknown keys.",
            )
        unknown.append((dotted, owner, key_path))
        _delete_path(merged, key_path)
    from_env: list[tuple[str, Layer | None, list[str]]] = []
    elsewhere: list[tuple[str, Layer | None, list[str]]] = []
    for entry in unknown:
        owner = entry[1]
        (from_env if owner is not None and owner.variables else elsewhere).append(entry)
    warnings.extend(_name_unknown(elsewhere))
    notes = _name_unknown(from_env)
    warnings.extend(notes)

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


def _name_unknown(unknown: list[tuple[str, Layer | None, list[str]]]) -> list[str]:
    """One line per unknown key, the first few by name. Where each key was set is worked out
    only for the keys named (it is the slow part)."""
    named = [
        f"ignoring unknown config key `{dotted}` ({owner.where(key_path) if owner else '?'})"
        for dotted, owner, key_path in unknown[: REPORTED + 1]
    ]
    if len(unknown) > REPORTED:
        named[REPORTED:] = [f"ignoring {len(unknown) - REPORTED} more unknown config keys"]
    return named


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


# --- merging -----------------------------------------------------------------------------


def _leaves_at(data: dict[str, Any], key_path: list[str]) -> list[list[str]]:
    node: Any = data
    for part in key_path:
        node = node[part]
    if isinstance(node, dict) and node:
        return [[*key_path, *leaf] for leaf in leaf_paths(node)]
    return [key_path]


def _delete_path(data: dict[str, Any], key_path: list[str]) -> None:
    node = data
    for part in key_path[:-1]:
        node = node[part]
    node.pop(key_path[-1], None)


# --- validation --------------------------------------------------------------------------


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _dict_value_model(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) is dict:
        args = typing.get_args(annotation)
        return _model_of(args[1]) if len(args) == 2 else None
    return None


def unknown_keys(model: type[BaseModel], data: dict[str, Any]) -> list[list[str]]:
    """Key paths in `data` that `model` does not define (checked through nested tables)."""
    found: list[list[str]] = []
    for key, value in data.items():
        info = model.model_fields.get(key)
        if info is None:
            found.append([key])
            continue
        annotation = without_none(info.annotation)
        nested = _model_of(annotation)
        if nested and isinstance(value, dict):
            found.extend([key, *sub] for sub in unknown_keys(nested, value))
        value_model = _dict_value_model(annotation)
        if value_model and isinstance(value, dict):
            for name, table in value.items():
                if isinstance(table, dict):
                    found.extend([key, name, *sub] for sub in unknown_keys(value_model, table))
    return found
