"""Applying an update's chunks to a file's text: the one apply step both grammars use.

Every chunk is placed (`match.place`) in the original text, each after the previous one,
before anything changes; then the text is rebuilt with each chunk's old lines replaced by its
new ones. Lines keep their own endings (CRLF, LF, or none at the end), added lines take the
file's usual one; a loosely matched context line is written as the grammar's `Rules` say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oiexec.tools.apply_patch.match import HunkReport, Miss, Rules, place, seek
from oiexec.tools.apply_patch.model import Chunk

#: A line of the result: its text and its ending (None: the file's usual one).
_Line = tuple[str, str | None]


@dataclass(frozen=True)
class Text:
    """File text as lines plus each line's own ending, so CRLF and a missing final newline
    survive an update."""

    lines: list[str]
    endings: list[str]
    final_newline: bool
    eol: str

    @classmethod
    def split(cls, text: str) -> Text:
        if text == "":
            return cls([], [], True, "\n")
        raw = text.split("\n")
        last = raw.pop()
        lines: list[str] = []
        endings: list[str] = []
        for line in raw:
            crlf = line.endswith("\r")
            lines.append(line[:-1] if crlf else line)
            endings.append("\r\n" if crlf else "\n")
        if last:
            lines.append(last)
            endings.append("")
        eol = "\r\n" if endings.count("\r\n") > endings.count("\n") else "\n"
        return cls(lines, endings, not last, eol)

    def splice(self, edits: Sequence[tuple[int, int, list[_Line]]], final_newline: bool) -> str:
        """The text with each (start, length, lines) edit applied, in order of start."""
        out: list[_Line] = []
        pos = 0
        for start, length, new in sorted(edits, key=lambda edit: edit[0]):
            out.extend(zip(self.lines[pos:start], self.endings[pos:start], strict=True))
            out.extend(new)
            pos = start + length
        out.extend(zip(self.lines[pos:], self.endings[pos:], strict=True))
        if not out:
            return ""
        endings = [ending or self.eol for _, ending in out]
        if not final_newline:
            endings[-1] = ""
        return "".join(text + ending for (text, _), ending in zip(out, endings, strict=True))

    def replacement(self, chunk: Chunk, at: int, context_from_patch: bool) -> list[_Line]:
        """`chunk`'s new lines for its match at `at`; context lines keep the file's endings,
        and its text unless `context_from_patch`."""
        out: list[_Line] = []
        k = at
        for op, text in chunk.lines:
            if op == " ":
                out.append((text if context_from_patch else self.lines[k], self.endings[k]))
            elif op == "+":
                out.append((text, None))
            k += op != "+"
        return out


def patch_text(
    text: str, chunks: Sequence[Chunk], rules: Rules, path: str
) -> tuple[str, tuple[HunkReport, ...]]:
    """`text` with `chunks` applied and where each landed; raises the grammar's
    `ApplyPatchError` (`rules.explain`) for the first chunk that has no place."""
    doc = Text.split(text)
    edits: list[tuple[int, int, list[_Line]]] = []
    reports: list[HunkReport] = []
    final_newline = doc.final_newline
    floor = delta = 0
    for number, chunk in enumerate(chunks, 1):
        if chunk.anchor is not None:
            found = seek(doc.lines, [chunk.anchor], floor=floor, ladder=rules.ladder)
            if found is None:
                raise rules.explain(Miss(path, doc.lines, chunk, number, len(chunks), floor, True))
            floor = found[0] + 1
        if not chunk.old_lines and not rules.by_line:
            # Codex: pure additions go after the anchor, else at the end of the file.
            at = len(doc.lines) if chunk.anchor is None or chunk.end_of_file else floor
            edits.append((at, 0, [(line, None) for line in chunk.new_lines]))
            continue
        near = None
        if rules.by_line:
            stated = chunk.line if chunk.line is not None else 1
            near = min(max(0, stated - 1 if chunk.old_lines else stated), len(doc.lines))
        placed = place(doc.lines, chunk, floor=floor, near=near, rules=rules)
        if placed is None:
            raise rules.explain(Miss(path, doc.lines, chunk, number, len(chunks), floor, False))
        old = len(placed.chunk.old_lines)
        new = doc.replacement(placed.chunk, placed.at, rules.context_from_patch)
        reaches_end = placed.at + old == len(doc.lines)
        if reaches_end and new and placed.chunk.final_newline is not None:
            final_newline = placed.chunk.final_newline
        edits.append((placed.at, old, new))
        offset = placed.at - placed.head - (floor if near is None else near)
        reports.append(HunkReport(placed.at + delta + 1, offset, placed.fuzz, placed.relaxed))
        delta += len(new) - old
        floor = placed.at + old
    return doc.splice(edits, final_newline), tuple(reports)
