"""Finding where a chunk goes in a file: the one matcher both grammars use.

A chunk's old lines are sought with ever looser comparisons (`Rules.ladder`: exact, then
ignoring trailing whitespace, all surrounding whitespace, then typographic look-alikes), each
over every candidate position before the next is tried, so an exact match always wins over a
loose one. Candidates start after the previous chunk: the nearest to the chunk's stated line
first when the grammar states one (unified diffs), else in file order. If that fails, the
chunk is tried again with context dropped (a stray blank last context line for Codex patches,
up to `fuzz` context lines at each end for unified diffs, as `patch` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from oiexec.tools.apply_patch.model import ApplyPatchError, Chunk

Compare = Callable[[str], str]

_FOLD = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
        **dict.fromkeys("\ufeff\u200b", None),
    }
)


def exact(line: str) -> str:
    return line


def fold(line: str) -> str:
    """`line` stripped, with typographic dashes, quotes and spaces as their ASCII forms."""
    return line.translate(_FOLD).strip()


#: The whole ladder of comparisons, strictest first.
LADDER: tuple[Compare, ...] = (exact, str.rstrip, str.strip, fold)


@dataclass(frozen=True)
class Miss:
    """A chunk that found no place, for the grammar to explain: `lines` is the file, `floor`
    where the search started, `anchor` whether it was the `@@` anchor line that was missing."""

    path: str
    lines: Sequence[str]
    chunk: Chunk
    number: int
    total: int
    floor: int
    anchor: bool


@dataclass(frozen=True)
class Rules:
    """How a grammar's chunks are matched and how a miss is worded."""

    ladder: tuple[Compare, ...]
    explain: Callable[[Miss], ApplyPatchError]
    #: Context lines that may be dropped at each end of a chunk that does not match.
    fuzz: int = 0
    #: Whether a trailing blank context line may be dropped (a stray line in the patch).
    stray_blank: bool = False
    #: Whether chunks are sought near their stated line (else after the previous chunk).
    by_line: bool = False
    #: Whether a loosely matched context line is written as the patch has it (Codex replaces
    #: the matched lines with the chunk's new lines, context included) or kept as the file
    #: has it (patch(1)).
    context_from_patch: bool = False


@dataclass(frozen=True)
class HunkReport:
    """Where a chunk landed: 1-based line in the patched file, distance from where it
    claimed to be, context dropped, and whether whitespace had to be ignored."""

    line: int
    offset: int
    fuzz: int
    whitespace_relaxed: bool


@dataclass(frozen=True)
class Placement:
    """Where the (possibly trimmed) `chunk` matched: its old lines start at `at`; `head`
    context lines were dropped from its start."""

    at: int
    chunk: Chunk
    head: int
    fuzz: int
    relaxed: bool


def _candidates(floor: int, last: int, near: int) -> Iterator[int]:
    # The nearest to `near` first (lower first on a tie), never before `floor`.
    near = max(near, floor)
    if near > last:
        yield from range(last, floor - 1, -1)
        return
    yield near
    for distance in range(1, max(near - floor, last - near) + 1):
        if near - distance >= floor:
            yield near - distance
        if near + distance <= last:
            yield near + distance


def seek(
    lines: Sequence[str],
    pattern: Sequence[str],
    *,
    floor: int,
    ladder: Sequence[Compare],
    near: int | None = None,
    eof: bool = False,
) -> tuple[int, int] | None:
    """(index, ladder step) of the first place at or after `floor` where `pattern` matches,
    trying each comparison of `ladder` in turn; with `eof` the pattern must end the file."""
    last = len(lines) - len(pattern)
    if last < floor:
        return None
    for step, norm in enumerate(ladder):
        wanted = [norm(p) for p in pattern]
        cache: dict[int, str] = {}

        def at(i: int, norm: Compare = norm, cache: dict[int, str] = cache) -> str:
            if i not in cache:
                cache[i] = norm(lines[i])
            return cache[i]

        positions = (last,) if eof else _candidates(floor, last, floor if near is None else near)
        for i in positions:
            if all(at(i + k) == w for k, w in enumerate(wanted)):
                return i, step
    return None


def _context_run(chunk: Chunk, *, tail: bool) -> int:
    ops = [op for op, _ in chunk.lines]
    if tail:
        ops.reverse()
    n = 0
    while n < len(ops) and ops[n] == " ":
        n += 1
    return n


def _variants(chunk: Chunk, rules: Rules) -> Iterator[tuple[int, int, Chunk]]:
    """(fuzz level, context lines dropped at the head, chunk) to try, in order."""
    yield 0, 0, chunk
    lines = chunk.lines
    if rules.stray_blank and len(chunk.old_lines) > 1 and lines[-1] == (" ", ""):
        yield 0, 0, Chunk(lines[:-1], chunk.anchor, chunk.end_of_file, chunk.line)
    lead, trail = _context_run(chunk, tail=False), _context_run(chunk, tail=True)
    for level in range(1, rules.fuzz + 1):
        head, tail = min(level, lead), min(level, trail)
        if head or tail:
            # Dropping trailing context drops the `\ No newline` marker that followed it.
            final = chunk.final_newline if not tail else True
            body = lines[head : len(lines) - tail]
            yield level, head, Chunk(body, chunk.anchor, chunk.end_of_file, chunk.line, final)


def place(
    lines: Sequence[str], chunk: Chunk, *, floor: int, near: int | None, rules: Rules
) -> Placement | None:
    """Where `chunk`'s old lines go, at or after `floor` (see the module docstring)."""
    for level, head, variant in _variants(chunk, rules):
        found = seek(
            lines,
            variant.old_lines,
            floor=floor,
            ladder=rules.ladder,
            near=None if near is None else near + head,
            eof=variant.end_of_file,
        )
        if found is not None:
            at, step = found
            return Placement(at, variant, head, level, step > 0)
    return None
