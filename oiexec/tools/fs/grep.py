"""Content search with ripgrep semantics: ripgrep itself when `rg` is on PATH, otherwise a
Python walk giving the same results for the same query (same files skipped, same order).

Results are data; each harness's `Style` words them. Both backends sort by
path components, then line, so output never depends on ripgrep's thread scheduling.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.reader import DEFAULT_MAX_BYTES, ReadRefused, ReadScope, open_directory
from oiexec.tools.fs._text import is_binary, read_bytes
from oiexec.tools.fs.globbing import glob_match
from oiexec.tools.fs.walk import walk, walk_root

#: Most bytes of ripgrep's JSON output one search takes in: the results are paged anyway,
#: and a pattern matching every line of a big tree must not grow the runner without end.
MAX_RG_OUTPUT_BYTES = 64 * 1024 * 1024

OutputMode = Literal["content", "files_with_matches", "count"]

#: Extensions for `type`, a subset of ripgrep's built-in type list (used by the fallback).
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "cpp": ("*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in"),
    "css": ("*.css", "*.scss"),
    "go": ("*.go",),
    "html": ("*.htm", "*.html", "*.ejs"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "js": ("*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"),
    "json": ("*.json", "composer.lock", "*.sarif"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"),
    "py": ("*.py", "*.pyi"),
    "rb": ("Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"),
    "rust": ("*.rs",),
    "sh": ("*.bash", "*.bashrc", ".bash_*", "*.zsh", ".zshrc", "*.sh", ".profile"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "txt": ("*.txt",),
    "yaml": ("*.yaml", "*.yml"),
}


@dataclass(frozen=True)
class GrepQuery:
    """One search. `context` sets both `before` and `after` when they are not given;
    `head_limit`/`offset` page through the mode's entries (lines, files or counts)."""

    pattern: str
    path: Path
    output_mode: OutputMode = "files_with_matches"
    glob: str | None = None
    file_type: str | None = None
    case_insensitive: bool = False
    before: int = 0
    after: int = 0
    context: int | None = None
    multiline: bool = False
    include_hidden: bool = False
    include_ignored: bool = False
    count_matches: bool = False
    head_limit: int | None = None
    offset: int = 0
    sort: Literal["path", "mtime_desc"] = "path"
    timeout: float = 60.0
    #: Where the runner may read (`oiexec.sandbox.reader`); None: regular files, bounded.
    scope: ReadScope | None = None


@dataclass(frozen=True)
class GrepLine:
    """A matching line (`is_match`) or a context line around one."""

    path: Path
    line: int
    text: str
    is_match: bool = True


@dataclass(frozen=True)
class GrepCount:
    path: Path
    count: int


@dataclass(frozen=True)
class GrepResult:
    """The page of entries for the query's mode, and how many there were before paging."""

    query: GrepQuery
    files: tuple[Path, ...] = ()
    lines: tuple[GrepLine, ...] = ()
    counts: tuple[GrepCount, ...] = ()
    total: int = 0
    backend: Literal["rg", "python"] = "python"

    @property
    def truncated(self) -> bool:
        shown = {"content": len(self.lines), "files_with_matches": len(self.files)}
        return self.query.offset + shown.get(self.query.output_mode, len(self.counts)) < self.total


@dataclass
class _FileHits:
    lines: dict[int, GrepLine] = field(default_factory=dict)
    matched_lines: int = 0
    matches: int = 0


def rg_available() -> bool:
    return _rg_path() is not None


def _rg_path() -> str | None:
    # The one `rg` resolved at the run's start outside the workspace and writable roots: a
    # planted `.venv/bin/rg` would otherwise run unconfined (oiexec.core.programs).
    from oiexec.core import programs

    return programs.find("rg")


def grep(query: GrepQuery, *, use_rg: bool | None = None) -> GrepResult:
    """Run `query` with ripgrep (default when installed) or the Python fallback."""
    if not query.path.exists():
        raise ToolInputError(f"Path does not exist: {query.path}", kind="missing", path=query.path)
    if not query.pattern:
        raise ToolInputError("pattern must not be empty.")
    single_file = not query.path.is_dir()
    if not single_file:
        walk_root(query.path, query.scope)
    rg = rg_available() if use_rg is None else use_rg and rg_available()
    # One file is searched here, through the reader: ripgrep would follow a link in its name.
    # So is a tree under a profile's deny rules: ripgrep knows nothing of them.
    denies = query.scope is not None and bool(query.scope.deny)
    rg = rg and not single_file and not denies
    if not rg and query.file_type is not None and query.file_type not in FILE_TYPES:
        raise ToolInputError(f"Unrecognized file type: {query.file_type}")
    hits = _run_rg(query) if rg else _run_python(query)
    return _assemble(query, hits, "rg" if rg else "python")


def _context(query: GrepQuery) -> tuple[int, int]:
    before = query.before or (query.context or 0)
    after = query.after or (query.context or 0)
    return (before, after) if query.output_mode == "content" else (0, 0)


def _sort_key(path: Path) -> tuple[str, ...]:
    return path.parts


def _assemble(query: GrepQuery, hits: dict[Path, _FileHits], backend: str) -> GrepResult:
    files = sorted((p for p, h in hits.items() if h.matches or h.matched_lines), key=_sort_key)
    if query.sort == "mtime_desc":
        files.sort(key=lambda p: -_mtime(p))
    start = max(0, query.offset)
    end = None if not query.head_limit else start + query.head_limit
    kind: Any = backend
    if query.output_mode == "files_with_matches":
        return GrepResult(query, tuple(files[start:end]), total=len(files), backend=kind)
    if query.output_mode == "count":
        counts = [
            GrepCount(p, hits[p].matches if query.count_matches else hits[p].matched_lines)
            for p in files
        ]
        return GrepResult(query, counts=tuple(counts[start:end]), total=len(counts), backend=kind)
    lines = [line for p in files for _, line in sorted(hits[p].lines.items())]
    return GrepResult(query, lines=tuple(lines[start:end]), total=len(lines), backend=kind)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


# --- ripgrep -------------------------------------------------------------------------------


def _rg_args(query: GrepQuery) -> list[str]:
    rg = _rg_path()
    assert rg is not None  # `grep` searches with rg only when a trusted one was found
    args = [rg, "--json", "--no-config", "--no-ignore-dot"]
    before, after = _context(query)
    args += [f"--before-context={before}", f"--after-context={after}"]
    if query.case_insensitive:
        args.append("--ignore-case")
    if query.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if query.include_hidden:
        args += ["--hidden", "--glob=!.git"]
    if query.include_ignored:
        args.append("--no-ignore")
    if query.glob:
        args += [f"--glob={g}" for g in _split_globs(query.glob)]
    if query.file_type:
        args.append(f"--type={query.file_type}")
    # Bounded as the in-process reads are; bigger files are skipped, as the fallback does.
    args.append(f"--max-filesize={DEFAULT_MAX_BYTES}")
    # Globs containing "/" are matched against the path as ripgrep prints it, so search from
    # the directory itself ("./...") to anchor them at the search root, as the fallback does.
    return [*args, "--regexp", query.pattern, "--", "."]


def _split_globs(raw: str) -> list[str]:
    # Globs may be brace sets ("*.{ts,tsx}") or space-separated lists; braces stay intact.
    return [part for part in re.split(r"\s+(?![^{]*\})", raw.strip()) if part]


def _run_rg(query: GrepQuery) -> dict[Path, _FileHits]:
    try:
        # ripgrep starts in the directory the reader opened (its fd, through /proc/self/fd):
        # a link swapped in for a component of the name after the check is never followed.
        with open_directory(query.scope or ReadScope(), query.path) as fd:
            lines, returncode, stderr = _rg_output(query, f"/proc/self/fd/{fd}", fd)
    except ReadRefused as exc:
        raise ToolInputError(exc.reason, kind="denied", path=query.path) from None
    hits: dict[Path, _FileHits] = {}
    for raw in lines:
        _absorb(json.loads(raw), hits, query.path)
    if returncode == 2 and not hits:
        raise ToolInputError(f"grep failed: {stderr}")
    return hits


def _rg_output(query: GrepQuery, cwd: str, fd: int) -> tuple[list[bytes], int, str]:
    """ripgrep's JSON lines (at most MAX_RG_OUTPUT_BYTES of them), exit status and the start
    of its stderr. Read as it comes: the output is never held past the cap."""
    import tempfile
    import threading

    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            _rg_args(query),
            cwd=cwd,
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        # A kill ends the read below too: ripgrep silent for long (a huge tree) is stopped.
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            proc.kill()

        timer = threading.Timer(query.timeout, stop)
        timer.start()
        lines: list[bytes] = []
        taken = 0
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                taken += len(raw)
                if taken > MAX_RG_OUTPUT_BYTES:
                    raise ToolInputError(
                        f"The search matched more than {MAX_RG_OUTPUT_BYTES} bytes of text; "
                        "narrow the path or the pattern."
                    )
                lines.append(raw)
            returncode = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if fired.is_set():
            raise ToolInputError(
                f"The search took longer than {query.timeout:g}s; narrow the path or the pattern."
            )
        errors.seek(0)
        stderr = errors.read(4096).decode("utf-8", errors="replace").strip()
    return lines, returncode, stderr


def _text(field_value: dict[str, str]) -> str:
    if "text" in field_value:
        return field_value["text"]
    return base64.b64decode(field_value.get("bytes", "")).decode("utf-8", errors="replace")


def _absorb(message: dict[str, Any], hits: dict[Path, _FileHits], root: Path | None) -> None:
    kind = message.get("type")
    if kind not in ("match", "context"):
        return
    data = message["data"]
    printed = _text(data["path"])
    path = Path(os.path.normpath(os.path.join(root, printed) if root else printed))
    entry = hits.setdefault(path, _FileHits())
    text = _text(data["lines"])
    first = data["line_number"]
    chunk = text.split("\n")
    if chunk and chunk[-1] == "":
        chunk.pop()
    for number, line in enumerate(chunk, start=first):
        is_match = kind == "match"
        old = entry.lines.get(number)
        entry.lines[number] = GrepLine(
            path, number, line.removesuffix("\r"), is_match or bool(old and old.is_match)
        )
        entry.matched_lines += is_match and not (old and old.is_match)
    if kind == "match":
        entry.matches += len(data.get("submatches", [])) or 1


# --- Python fallback ------------------------------------------------------------------------


def _compile(query: GrepQuery) -> re.Pattern[str]:
    flags = re.MULTILINE | (re.IGNORECASE if query.case_insensitive else 0)
    if query.multiline:
        flags |= re.DOTALL
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolInputError(f"Invalid regular expression {query.pattern!r}: {exc}") from None


def _candidates(query: GrepQuery) -> Iterator[Path]:
    if not query.path.is_dir():
        yield query.path
        return
    globs = _split_globs(query.glob) if query.glob else []
    include = [g for g in globs if not g.startswith("!")]
    exclude = [g[1:] for g in globs if g.startswith("!")]
    types = FILE_TYPES.get(query.file_type or "", ())
    for entry in walk(
        query.path,
        include_hidden=query.include_hidden,
        respect_gitignore=not query.include_ignored,
        scope=query.scope,
    ):
        if entry.is_dir:
            continue
        if include and not any(glob_match(g, entry.rel) for g in include):
            continue
        if any(glob_match(g, entry.rel) for g in exclude):
            continue
        if types and not any(glob_match(t, entry.rel) for t in types):
            continue
        yield Path(os.path.normpath(entry.path))


def _run_python(query: GrepQuery) -> dict[Path, _FileHits]:
    regex = _compile(query)
    before, after = _context(query)
    hits: dict[Path, _FileHits] = {}
    single_file = not query.path.is_dir()
    for path in _candidates(query):
        try:
            data = read_bytes(path, query.scope)
        except ToolInputError:
            if single_file:
                raise  # the model named it: say why it cannot be searched
            continue  # skipped, as ripgrep skips what it cannot (or may not) read
        if is_binary(data):
            continue
        found = _search_text(path, data.decode("utf-8", errors="replace"), regex, query)
        if found is not None:
            _add_context(found, path, data.decode("utf-8", errors="replace"), before, after)
            hits[path] = found
    return hits


def _search_text(
    path: Path, text: str, regex: re.Pattern[str], query: GrepQuery
) -> _FileHits | None:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hits = _FileHits()
    if query.multiline:
        starts = _line_starts(text)
        for match in regex.finditer(text):
            first = _line_of(starts, match.start())
            last = _line_of(starts, max(match.start(), match.end() - 1))
            hits.matches += 1
            _mark(hits, path, lines, range(first, last + 1))
    else:
        for number, line in enumerate(lines, start=1):
            count = sum(1 for _ in regex.finditer(line.removesuffix("\r")))
            if count:
                hits.matches += count
                _mark(hits, path, lines, [number])
    return hits if hits.matches else None


def _mark(hits: _FileHits, path: Path, lines: list[str], numbers: Iterable[int]) -> None:
    for number in numbers:
        if number in hits.lines or number > len(lines):
            continue
        hits.lines[number] = GrepLine(path, number, lines[number - 1].removesuffix("\r"))
        hits.matched_lines += 1


def _add_context(hits: _FileHits, path: Path, text: str, before: int, after: int) -> None:
    if not before and not after:
        return
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number in [n for n, line in hits.lines.items() if line.is_match]:
        for near in range(max(1, number - before), min(len(lines), number + after) + 1):
            if near not in hits.lines:
                hits.lines[near] = GrepLine(path, near, lines[near - 1].removesuffix("\r"), False)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, char in enumerate(text) if char == "\n")
    return starts


def _line_of(starts: list[int], index: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if starts[mid] <= index:
            low = mid
        else:
            high = mid - 1
    return low + 1
