"""Recognising a shell command that only runs `apply_patch` on a patch, so the runner can
apply it itself (as Codex does) instead of running a command that does not exist:

    cd sub && apply_patch <<'EOF'
    *** Begin Patch
    ...
    *** End Patch
    EOF
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from oiexec.tools.apply_patch.codex import BEGIN_PATCH


@dataclass(frozen=True)
class HeredocInvocation:
    """`apply_patch <<'EOF' … EOF` run through the shell, optionally after `cd dir &&`."""

    patch: str
    workdir: str | None = None


_SHELL_HEAD = re.compile(
    r"^\s*(?:cd\s+(?P<dir>'[^']*'|\"[^\"]*\"|[^\s;&|'\"]+)\s*&&\s*)?"
    r"(?:apply_patch|applypatch)\s*<<(?P<dash>-?)\s*(?P<q>['\"]?)"
    r"(?P<delim>[A-Za-z_][A-Za-z0-9_]*)(?P=q)\s*$"
)
_PATCH_COMMANDS = ("apply_patch", "applypatch")


def _unquote(word: str) -> str:
    return shlex.split(word)[0] if word[:1] in "'\"" else word


def parse_heredoc_invocation(command: str) -> HeredocInvocation | None:
    """Recognise a shell command that only runs `apply_patch` on a patch (heredoc or a single
    quoted argument); None for anything else, so the command runs normally."""
    lines = command.split("\n")
    head = _SHELL_HEAD.match(lines[0])
    if head:
        delim, dash = head.group("delim"), bool(head.group("dash"))
        body = [line.lstrip("\t") if dash else line for line in lines[1:]]
        # As in the shell, the first line that is the delimiter ends the document (so a
        # context line ` EOF` does not), and anything after it would be another command.
        end = next((i for i, line in enumerate(body) if line.rstrip() == delim), None)
        if end is None or any(line.strip() for line in body[end + 1 :]):
            return None
        text = "\n".join(body[:end]) + "\n"
        if BEGIN_PATCH not in text:
            return None
        workdir = head.group("dir")
        return HeredocInvocation(text, _unquote(workdir) if workdir else None)
    if BEGIN_PATCH not in command or not any(name in command for name in _PATCH_COMMANDS):
        return None  # shlex is slow on long text (seconds for a 300 KB command): skip it
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    workdir = None
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        workdir, words = words[1], words[3:]
    if (
        len(words) == 2
        and words[0] in _PATCH_COMMANDS
        and words[1].lstrip().startswith(BEGIN_PATCH)
    ):
        return HeredocInvocation(words[1], workdir)
    return None


def extract_heredoc_patch(command: str) -> str | None:
    """The patch text of an `apply_patch <<'EOF' … EOF` shell command, or None."""
    invocation = parse_heredoc_invocation(command)
    return invocation.patch if invocation else None
