"""Where the programs the runner itself starts outside the sandbox (git, rg, bwrap) come from.

The runner's PATH is not the runner's own: in CI it often starts with the workspace's
`.venv/bin` or `node_modules/.bin` (an activated venv, `npm run`), and a sandboxed command can
write there. A `git` planted there would then run unconfined, as the runner's user, the next
time the runner looked the name up. So a name is resolved here once and the absolute path is
what every later call uses:

* from `program_paths` in config (an absolute path, itself outside every untrusted root), else
* from the first PATH entry that is absolute and whose real path lies outside every untrusted
  root (relative entries, like `.venv/bin`, are judged against a cwd the model may control,
  so they are skipped), the program's own real path outside them too, else
* from a fixed system path the caller names (bwrap's).

Untrusted roots are the run's writable roots, its workspace and project root (set by the
runner before the model starts, `distrust`), and, before any run has set them, the current
directory (`interpreter mcp list`, review target resolution, session lookups). Distrusting
more forgets what was resolved, so nothing found before the roots were known is kept; after
the run's start nothing is distrusted again, so nothing is ever looked up twice.

`judge_program` and `trusted_path_value` apply the same rule to what config asks the runner
to start (hooks, notify, MCP servers).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from oiexec.core import links
from oiexec.core.errors import ConfigError

__all__ = [
    "Resolution",
    "distrust",
    "find",
    "judge_program",
    "reset",
    "resolutions",
    "trusted_path_value",
    "untrusted_holder",
    "untrusted_roots",
    "use_paths",
]

#: The programs a run resolves at its start (doctor lists them too).
RUN_PROGRAMS = ("git", "rg")


@dataclass(frozen=True)
class Resolution:
    """Where a program name was found, or why it was not."""

    name: str
    path: str | None
    #: "config", "PATH", "fallback", or "missing".
    source: str
    #: PATH entries passed over, each with why (`relative`, `inside /ws`).
    skipped: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": self.path,
            "source": self.source,
            "skipped": list(self.skipped),
        }


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.roots: list[Path] = []
        self.explicit: dict[str, str] = {}
        self.found: dict[str, Resolution] = {}


_STATE = _State()


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _default_roots() -> list[Path]:
    try:
        cwd = _real(os.getcwd())
    except OSError:
        return []
    return [cwd]


def untrusted_roots() -> tuple[Path, ...]:
    """The roots whose contents a sandboxed command (or a reviewed repository) controls: the
    distrusted ones, else the current directory."""
    with _STATE.lock:
        roots = list(_STATE.roots) or _default_roots()
    # `/` as a root would leave nothing to trust (and nothing to run): a workspace of `/`
    # cannot be defended by where programs live, and is left to the sandbox's mode.
    return tuple(root for root in roots if root != Path("/"))


def _holder(path: Path | str, roots: Sequence[Path]) -> Path | None:
    """The root holding `path` (absolute), or any symbolic link on the way to it: a link
    there could be pointed elsewhere after the path was judged."""

    def deepest(place: Path) -> Path | None:
        holding = [root for root in roots if _within(place, root)]
        return max(holding, key=lambda root: len(root.parts), default=None)

    resolved, met, _ = links.resolve(Path(os.path.abspath(path)))
    for link, _target in met:
        hit = deepest(link)
        if hit is not None:
            return hit
    return deepest(resolved)


def untrusted_holder(path: Path | str, extra: Sequence[Path] = ()) -> Path | None:
    """The untrusted root `path` lies in, or a symbolic link on the way to it, or None."""
    roots = [*untrusted_roots(), *(_real(r) for r in extra)]
    return _holder(path, roots)


def distrust(roots: Iterable[Path]) -> None:
    """Adds untrusted roots (resolved now) and forgets every resolution made without them.
    Called before the model runs; never afterwards."""
    with _STATE.lock:
        for root in roots:
            real = _real(root)
            if real not in _STATE.roots:
                _STATE.roots.append(real)
        _STATE.found.clear()


def use_paths(paths: Mapping[str, str], origin: str = "program_paths") -> None:
    """Explicit programs from config (`program_paths = { git = "/usr/bin/git" }`); raises
    `ConfigError` for one that is relative, not executable or inside an untrusted root."""
    checked: dict[str, str] = {}
    for name, value in paths.items():
        where = f"{origin}.{name}"
        if not os.path.isabs(value):
            raise ConfigError(
                f"{where} = {value!r} is not an absolute path",
                hint=f'give the full path, e.g. {where} = "/usr/bin/{name}"',
            )
        if not (os.path.isfile(value) and os.access(value, os.X_OK)):
            raise ConfigError(f"{where} = {value!r} is not an executable file")
        holder = untrusted_holder(value)
        if holder is not None:
            raise ConfigError(
                f"{where} = {value!r} lies inside {holder}, which sandboxed commands can "
                "write; the runner starts it outside the sandbox",
                hint="install the program outside the workspace and give that path",
            )
        checked[name] = value
    with _STATE.lock:
        _STATE.explicit = checked
        _STATE.found.clear()


def reset() -> None:
    """Back to no distrusted roots, no explicit paths, nothing resolved (tests; a new run in
    the same process)."""
    with _STATE.lock:
        _STATE.roots.clear()
        _STATE.explicit.clear()
        _STATE.found.clear()


def _candidate(directory: Path, name: str, roots: Sequence[Path]) -> str | None:
    path = directory / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        return None
    if _holder(path, roots) is not None:
        return None  # a trusted directory's link into the workspace
    # The directory resolved, the name kept: multi-call binaries go by the name they're run as.
    return str(path)


def _search(
    name: str, path_value: str, roots: Sequence[Path]
) -> tuple[str | None, tuple[str, ...]]:
    skipped: list[str] = []
    for entry in path_value.split(os.pathsep):
        if not entry:
            continue
        if not os.path.isabs(entry):
            skipped.append(f"{entry} (relative)")
            continue
        holder = _holder(entry, roots)
        if holder is not None:
            skipped.append(f"{entry} (inside {holder})")
            continue
        found = _candidate(_real(entry), name, roots)
        if found is not None:
            return found, tuple(skipped)
    return None, tuple(skipped)


def find(
    name: str, *, fallbacks: Sequence[str] = (), extra_untrusted: Sequence[Path] = ()
) -> str | None:
    """The absolute path the runner starts `name` from, or None when there is no trusted one.
    Resolved once (per set of untrusted roots) from config, PATH, then `fallbacks`."""
    return resolve(name, fallbacks=fallbacks, extra_untrusted=extra_untrusted).path


def resolve(
    name: str, *, fallbacks: Sequence[str] = (), extra_untrusted: Sequence[Path] = ()
) -> Resolution:
    """`find` with where the path came from and what was passed over."""
    extra = sorted({_real(r) for r in extra_untrusted})
    # Each set of extra roots (bwrap's: the policy's writable roots) is resolved once too.
    key = "\0".join([name, *map(str, extra)])
    with _STATE.lock:
        known = _STATE.found.get(key)
        explicit = _STATE.explicit.get(name)
    if known is not None:
        return known
    roots = [*untrusted_roots(), *extra]
    if explicit is not None:
        result = Resolution(name, explicit, "config")
    else:
        path, skipped = _search(name, os.environ.get("PATH", os.defpath), roots)
        if path is not None:
            result = Resolution(name, path, "PATH", skipped)
        else:
            fixed = next(
                (p for p in fallbacks if os.access(p, os.X_OK) and _holder(p, roots) is None),
                None,
            )
            source = "fallback" if fixed is not None else "missing"
            result = Resolution(name, fixed, source, skipped)
    with _STATE.lock:
        return _STATE.found.setdefault(key, result)


def resolutions(names: Sequence[str] = RUN_PROGRAMS) -> list[Resolution]:
    """How each of `names` resolves now (for `sandbox doctor`)."""
    return [resolve(name) for name in names]


def trusted_path_value(path_value: str, extra_untrusted: Sequence[Path] = ()) -> str:
    """`path_value` (a PATH) without its relative entries and those inside an untrusted
    root: what the programs the runner starts outside the sandbox search."""
    roots = [*untrusted_roots(), *(_real(r) for r in extra_untrusted)]
    kept = [
        entry
        for entry in path_value.split(os.pathsep)
        if entry and os.path.isabs(entry) and _holder(entry, roots) is None
    ]
    return os.pathsep.join(kept)


def judge_program(
    program: str, *, cwd: Path, path_value: str, extra_untrusted: Sequence[Path] = ()
) -> tuple[str | None, str | None]:
    """(absolute path, None) for the program a command names, as exec would find it;
    (None, why it is refused) for a path (relative ones from `cwd`) or first PATH hit that
    lies in an untrusted root, or found in a relative PATH entry; (None, None) when there is
    no such program."""
    roots = [*untrusted_roots(), *(_real(r) for r in extra_untrusted)]
    if os.sep in program:
        path = Path(program) if os.path.isabs(program) else cwd / program
        holder = _holder(path, roots)
        if holder is not None:
            return None, (
                f"`{program}` lies inside {holder}, which sandboxed commands can write, and "
                "would run outside the sandbox; give an absolute path to a program installed "
                "outside the workspace"
            )
        if not (path.is_file() and os.access(path, os.X_OK)):
            return None, None
        return str(path), None
    for entry in path_value.split(os.pathsep):
        if not entry:
            continue
        directory = Path(entry) if os.path.isabs(entry) else cwd / entry
        candidate = directory / program
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        holder = _holder(candidate, roots)
        if not os.path.isabs(entry) or holder is not None:
            where = str(holder if holder is not None else cwd)
            if not os.path.isabs(entry):
                where = f"{where} (the relative PATH entry `{entry}`)"
            return None, (
                f"`{program}` is found first in {candidate}, inside {where}, which sandboxed "
                "commands can write, and would run outside the sandbox; give an absolute "
                "path to a program installed outside the workspace, or take that directory "
                "off PATH"
            )
        return str(candidate), None
    return None, None
