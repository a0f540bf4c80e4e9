"""The user's instructions for a run: `model_instructions_file`, `developer_instructions` and
`--append-system-prompt`, read before the thread starts (a bad one fails at once, exit 3 for
config, exit 2 for the flag) and handed to the harness, which puts them where its product
does (harness/instructions.py).

`model_instructions_file` is read in the runner's own process, outside the sandbox, so who
named the path decides how it is read:

- the user's own config (config.toml, a profile, `OIEXEC_`/`OPENINTERPRETER_` variables, `-c`):
  the user's path, read as any file the user names (core/userfile: a regular file, bounded);
- a project's `.openinterpreter/config.toml` (read only for a trusted project, but written by
  whoever commits to it): only a file inside the project, and through no symbolic link that
  leaves it; it is opened by its real path beneath the project root with no link followed
  (a link swapped in meanwhile fails), not under a permission profile's deny paths, and
  bounded (sandbox/reader), so a committed config cannot make the runner read `~/.ssh/id_rsa` or
  `/proc/self/environ` into a request sent to the provider.

A relative path is relative to the directory of the config file that sets it, as Codex
resolves it (a project's: `.openinterpreter/`); one given by `-c` or a variable, to the run's
working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from oiexec.config.layers import Layer, layer_of
from oiexec.config.loader import LoadedConfig
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.policy import SandboxPolicy
from oiexec.core.userfile import MIB, describe_size, read_user_file, user_text
from oiexec.harness.instructions import Instructions

__all__ = ["INSTRUCTIONS_MAX", "run_instructions"]

#: Hand-written instructions: this is far above any prompt and any model's context window.
INSTRUCTIONS_MAX = 1 * MIB
_KEY = "model_instructions_file"
_FLAG = "--append-system-prompt"


def run_instructions(
    config: LoadedConfig,
    cwd: Path,
    policy: SandboxPolicy,
    *,
    appended: str | None,
    review: bool,
) -> tuple[Instructions, list[str]]:
    """The run's instructions and the notes to show (stderr and the run log). `appended` is
    `--append-system-prompt` as parsed (`@/absolute/path` names a file); `review` says the
    review rubric is the base instructions, which no file replaces."""
    settings = config.settings
    notes: list[str] = []
    base: str | None = None
    if settings.model_instructions_file is not None:
        layer = layer_of(config.layers, [_KEY])
        where = layer.where([_KEY]) if layer is not None else "config"
        if review:
            notes.append(
                f"{_KEY} ({where}): not used by review, whose rubric is its base instructions"
            )
        else:
            path, text = _read_base(config, layer, cwd, policy, settings.model_instructions_file)
            base = text
            notes.append(f"{_KEY} ({where}): {path} replaces the harness's base instructions")
    parts = [settings.developer_instructions, _appended_text(appended)]
    developer = "\n\n".join(part.strip("\n") for part in parts if part and part.strip())
    return Instructions(base=base, developer=developer or None), notes


def _read_base(
    config: LoadedConfig, layer: Layer | None, cwd: Path, policy: SandboxPolicy, value: str
) -> tuple[Path, str]:
    """The path `value` names (see the module's doc for relative paths) and its text."""
    from_project = layer is not None and layer.name == "project"
    given = Path(value) if from_project else Path(value).expanduser()
    base_dir = layer.path.parent if layer is not None and layer.path is not None else cwd
    path = Path(os.path.normpath(base_dir / given))
    where = layer.where([_KEY]) if layer is not None else "config"
    name = f"{_KEY} {path} ({where})"
    if from_project:
        data = _read_in_project(config.project_root, path, policy, name)
    else:
        data = read_user_file(path, name=name, cap=INSTRUCTIONS_MAX, error=ConfigError)
    text = user_text(data, name=name, error=ConfigError)
    if not text.strip():
        raise ConfigError(
            f"{name}: the file is empty",
            hint="Write the base instructions in it, or remove the key to keep the harness's.",
        )
    return path, text


def _read_in_project(root: Path, path: Path, policy: SandboxPolicy, name: str) -> bytes:
    """The file at `path`, only if it is inside the project `root` and reached without a
    symbolic link leaving it; opened beneath the root, regular, bounded."""
    from oiexec.sandbox.reader import ReadRefused, ReadScope, read_file

    scope = ReadScope.confined(root, deny=policy.deny_paths)
    try:
        return read_file(scope, path, max_bytes=INSTRUCTIONS_MAX).data
    except ReadRefused as exc:
        if exc.kind == "missing":
            reason = "no such file"
        elif exc.kind == "too_big":
            reason = f"over the {describe_size(INSTRUCTIONS_MAX)} limit for this file"
        elif exc.kind == "outside":
            reason = (
                f"a project's config may only name a file inside the project {root}, "
                "not through a symbolic link that leaves it"
            )
        else:
            reason = exc.reason
        raise ConfigError(
            f"{name}: {reason}",
            hint="Set model_instructions_file in your own config.toml (or with -c) to read "
            "a file elsewhere.",
        ) from None
    except OSError as exc:
        raise ConfigError(f"{name}: {exc.strerror or exc}") from None


def _appended_text(appended: str | None) -> str | None:
    """`--append-system-prompt`'s text: the value, or the file an `@` names."""
    if appended is None or not appended.startswith("@"):
        return appended
    path = Path(appended[1:])
    name = f"{_FLAG} @{path}"
    text = user_text(read_user_file(path, name=name, cap=INSTRUCTIONS_MAX), name=name)
    if not text.strip():
        raise UsageError(
            f"{name}: the file is empty",
            hint="Write the text to append in it, or leave the flag out.",
        )
    return text
