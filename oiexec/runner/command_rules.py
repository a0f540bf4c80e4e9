"""The run's command rules, read once before the thread starts.

Where from, as Codex reads `~/.codex/rules/*.rules`:

- `$OPENINTERPRETER_HOME/rules/*.rules`: the user's own files (read as config is, links
  followed);
- `<project>/.openinterpreter/rules/*.rules`, for a trusted project only (trust is read from
  the user config, see oiexec/config/loader.py). These files come with the repository, so
  they are opened beneath the project root with no symbolic link followed at any step, only
  regular files, each at most `MAX_RULES_FILE` bytes and at most `MAX_RULES_FILES` of them.
  A file (or `.openinterpreter/rules` itself) reached through a link is ignored with a
  warning, as the project's config and hooks are: the sandbox keeps `.openinterpreter`
  read-only, not where a link sends it. An untrusted project's rules are not read; a
  warning says so.

Files are read in name order, the user's first; a problem in any of them (syntax, a bad
value, an example that contradicts its rule) is a `ConfigError` naming the file and line:
exit 3, before any command runs. `--ignore-rules` reads none.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.config.loader import PROJECT_DIR, LoadedConfig
from oiexec.core.errors import ConfigError
from oiexec.core.userfile import describe_size, read_at_most, read_user_file, user_text

if TYPE_CHECKING:
    from oiexec.tools.rules.check import RuleSet
    from oiexec.tools.rules.model import PrefixRule

__all__ = ["MAX_RULES_FILE", "MAX_RULES_FILES", "load_command_rules"]

RULES_DIR = "rules"
SUFFIX = ".rules"
#: Hand-written files of a few rules each; far above any real one.
MAX_RULES_FILE = 1024 * 1024
#: Files read from one rules directory.
MAX_RULES_FILES = 256
_HINT = "fix it, or run with --ignore-rules to skip command rules"
_FILE_FLAGS = (
    os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
)


def load_command_rules(
    config: LoadedConfig, *, ignore: bool, warnings: list[str]
) -> RuleSet | None:
    """The rules the run applies (None: none found, or `ignore`); notes go to `warnings`."""
    if ignore:
        return None
    sources = _user_files(config.home / RULES_DIR)
    project_dir = config.project_root / PROJECT_DIR / RULES_DIR
    if config.trusted:
        sources.extend(_project_files(config.project_root, warnings))
    elif os.path.isdir(project_dir) and not os.path.islink(project_dir):
        warnings.append(
            f"ignored the command rules in {project_dir}: the project is not trusted. Trust it "
            f'by adding [projects."{config.project_root}"] trust_level = "trusted" to '
            f"{config.home / 'config.toml'}"
        )
    rules: list[PrefixRule] = []
    for name, text in sources:
        rules.extend(_parse(text, name, warnings))
    if not rules:
        return None
    from oiexec.tools.rules.check import RuleSet  # a run without rules never imports it

    return RuleSet(tuple(rules))


def _parse(text: str, name: str, warnings: list[str]) -> list[PrefixRule]:
    from oiexec.tools.rules.parse import parse_rules

    parsed = parse_rules(text, name)
    warnings.extend(parsed.notes)
    return parsed.rules


def _user_files(directory: Path) -> list[tuple[str, str]]:
    """The user's rules files: (name for messages, text)."""
    if not directory.is_dir():
        return []
    found: list[tuple[str, str]] = []
    for path in sorted(directory.glob(f"*{SUFFIX}"))[:MAX_RULES_FILES]:
        name = f"command rules {path}"
        data = read_user_file(path, name=name, cap=MAX_RULES_FILE, error=ConfigError)
        found.append((str(path), user_text(data, name=name, error=ConfigError)))
    return found


def _project_files(project_root: Path, warnings: list[str]) -> list[tuple[str, str]]:
    """A trusted project's rules files, opened beneath its root without following links."""
    from oiexec.sandbox.beneath import open_beneath

    root = os.path.realpath(project_root)
    relative = f"{PROJECT_DIR}/{RULES_DIR}"
    shown = Path(root, relative)
    try:
        dir_fd = open_beneath(root, relative, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        # Without openat2, O_DIRECTORY|O_NOFOLLOW on a link to a directory says ENOTDIR.
        if not (_linked(exc) or os.path.islink(shown)):
            raise _unreadable(shown, exc) from None
        if os.path.isdir(shown):  # only where a link leads to rules: nothing to say otherwise
            warnings.append(_link_warning(shown))
        return []
    try:
        names = sorted(n for n in os.listdir(dir_fd) if n.endswith(SUFFIX))[:MAX_RULES_FILES]
        found: list[tuple[str, str]] = []
        for name in names:
            text = _read_project_file(dir_fd, shown / name, name)
            if text is None:
                warnings.append(_link_warning(shown / name))
            else:
                found.append((str(shown / name), text))
        return found
    finally:
        os.close(dir_fd)


def _read_project_file(dir_fd: int, shown: Path, name: str) -> str | None:
    """The file's text; None when it is a symbolic link."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if _linked(exc):
            return None
        raise _unreadable(shown, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"command rules {shown}: not a regular file", hint=_HINT)
        if info.st_size > MAX_RULES_FILE:
            raise _too_big(shown)
        os.set_blocking(fd, True)
        data = read_at_most(fd, MAX_RULES_FILE)
    finally:
        os.close(fd)
    if len(data) > MAX_RULES_FILE:
        raise _too_big(shown)
    return user_text(data, name=f"command rules {shown}", error=ConfigError)


def _linked(exc: OSError) -> bool:
    """Whether opening failed on a symbolic link (ELOOP), or one out of the root (EXDEV)."""
    return exc.errno in (errno.ELOOP, errno.EXDEV)


def _link_warning(path: Path) -> str:
    return (
        f"ignored the command rules in {path}: it is reached through a symbolic link, which the "
        "sandbox cannot keep read-only; make .openinterpreter/rules and its files real "
        "directories and files"
    )


def _unreadable(path: Path, exc: OSError) -> ConfigError:
    return ConfigError(f"command rules {path}: cannot be read: {exc.strerror or exc}", hint=_HINT)


def _too_big(path: Path) -> ConfigError:
    return ConfigError(
        f"command rules {path}: over the {describe_size(MAX_RULES_FILE)} limit for a rules file",
        hint=_HINT,
    )
