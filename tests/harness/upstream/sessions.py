"""Scripted tool sessions shared by the capture (real clients) and the replay (our harnesses).

Each upstream client is driven through the same kinds of calls, in its own tool names: a
command that succeeds, fails, prints nothing, prints a lot, or is refused by the OS; reads of
a missing, an empty, a binary and an ordinary file; exact edits whose target is missing, not
unique, or found; a write followed by a read. The workspace starts with `SEED`. A step's
arguments may hold `{ws}`, the workspace directory.

What a tool returned is compared after `normalise`, which replaces only what differs from
run to run: the workspace and home paths, process ids, durations, generated ids.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
#: The files every session starts with (path relative to the workspace -> bytes).
SEED: dict[str, bytes] = {
    "calc.py": CALC.encode(),
    "notes.txt": b"alpha\nbeta\n",
    "empty.txt": b"",
    "blob.bin": bytes(range(256)) * 4,
    # Not executable: running it is refused by the OS (exit 126), as root too.
    "script.sh": b"#!/bin/sh\necho never\n",
    # A folder, for listings, recursive globs and matches in more than one file.
    "sub/inner.txt": b"beta\ngamma beta\n",
}
#: Seconds apart, so modification-time order is fixed (newest first: notes.txt).
SEED_ORDER = ("blob.bin", "empty.txt", "script.sh", "sub/inner.txt", "calc.py", "notes.txt")

FAIL = "echo out; echo err >&2; exit 3"
LONG = "seq 1 40000"
FIXED_OLD = "def add(a, b):\n    return a - b"
FIXED_NEW = "def add(a, b):\n    return a + b"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def seed(root: Path) -> None:
    """Lay `SEED` out under `root`, oldest first (1 s apart in mtime)."""
    import os

    for index, name in enumerate(SEED_ORDER):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(SEED[name])
        stamp = 1_700_000_000 + index
        os.utime(path, (stamp, stamp))
    for folder in {(root / name).parent for name in SEED_ORDER} - {root}:
        os.utime(folder, (1_700_000_000, 1_700_000_000))


@dataclass(frozen=True)
class Step:
    label: str
    tool: str
    #: JSON arguments, or the raw input of a freeform tool (Codex's apply_patch).
    args: dict[str, Any] | str


def _shell(tool: str, key: str = "command", **extra: Any) -> list[Step]:
    return [
        Step("shell.success", tool, {key: "echo hello", **extra}),
        Step("shell.failure", tool, {key: FAIL, **extra}),
        Step("shell.empty", tool, {key: "true", **extra}),
        Step("shell.long", tool, {key: LONG, **extra}),
        Step("shell.permission_denied", tool, {key: "./script.sh", **extra}),
    ]


def _timeout(tool: str) -> Step:
    """A command outliving its 1-second limit (the tools that take one, in milliseconds)."""
    return Step("shell.timeout", tool, {"command": "echo started; sleep 5", "timeout": 1000})


def _files(
    read: str,
    write: str,
    edit: str,
    *,
    path: str,
    old: str,
    new: str,
    content: str = "content",
    all_key: str = "replace_all",
    line_two: int = 2,
) -> list[Step]:
    """Reads, edits and writes with these tool and argument names, in a fixed order
    (`line_two`: the offset naming the second line, 1 where offsets count from 0)."""

    def at(name: str) -> str:
        return "{ws}/" + name

    return [
        Step("read.missing", read, {path: at("nope.txt")}),
        Step("read.empty", read, {path: at("empty.txt")}),
        Step("read.binary", read, {path: at("blob.bin")}),
        Step("edit.before_read", edit, {path: at("calc.py"), old: "a - b", new: "a + b"}),
        Step("read.success", read, {path: at("calc.py")}),
        Step("edit.not_found", edit, {path: at("calc.py"), old: "return a * b", new: "x"}),
        Step("edit.not_unique", edit, {path: at("calc.py"), old: "return a - b", new: "x"}),
        Step("edit.success", edit, {path: at("calc.py"), old: FIXED_OLD, new: FIXED_NEW}),
        Step("write.existing_unread", write, {path: at("notes.txt"), content: "gamma\n"}),
        Step("write.new", write, {path: at("made.txt"), content: "one\ntwo\n"}),
        Step("read.after_write", read, {path: at("made.txt")}),
        Step("read.again_unchanged", read, {path: at("made.txt")}),
        Step("read.partial", read, {path: at("calc.py"), "offset": line_two, "limit": 2}),
        Step(
            "edit.replace_all",
            edit,
            {path: at("calc.py"), old: "(a, b)", new: "(x, y)", all_key: True},
        ),
        Step("read.before_overwrite", read, {path: at("sub/inner.txt")}),
        Step("write.existing_read", write, {path: at("sub/inner.txt"), content: "delta\n"}),
    ]


def _patch(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch\n"


_PATCHES = [
    ("patch.missing_file", "*** Update File: {ws}/nope.txt\n@@\n-a\n+b\n"),
    ("patch.context_not_found", "*** Update File: {ws}/calc.py\n@@\n-    return a * b\n+x\n"),
    (
        "patch.success",
        f"*** Update File: {{ws}}/calc.py\n@@\n-{FIXED_OLD.split(chr(10))[1]}\n"
        f"+{FIXED_NEW.split(chr(10))[1]}\n",
    ),
    ("patch.add", "*** Add File: {ws}/made.txt\n+one\n+two\n"),
    ("patch.delete", "*** Delete File: {ws}/empty.txt\n"),
]

SCRIPTS: dict[str, list[Step]] = {
    "claude-code": [
        *_shell("Bash"),
        _timeout("Bash"),
        *_files("Read", "Write", "Edit", path="file_path", old="old_string", new="new_string"),
    ],
    "qwen-code": [
        *_shell("run_shell_command"),
        _timeout("run_shell_command"),
        *_files(
            "read_file",
            "write_file",
            "edit",
            path="file_path",
            old="old_string",
            new="new_string",
            line_two=1,
        ),
        Step("glob.match", "glob", {"pattern": "*.txt"}),
        Step("glob.none", "glob", {"pattern": "*.rs"}),
        Step("grep.match", "grep_search", {"pattern": "beta"}),
        Step("grep.none", "grep_search", {"pattern": "zeta"}),
        Step("list.root", "list_directory", {"path": "{ws}"}),
    ],
    "opencode": [
        *_shell("bash"),
        _timeout("bash"),
        *_files(
            "read",
            "write",
            "edit",
            path="filePath",
            old="oldString",
            new="newString",
            all_key="replaceAll",
        ),
        Step("glob.match", "glob", {"pattern": "*.txt"}),
        # No grep: opencode 1.18.33 fetches its own ripgrep on first use, which fails
        # without the network, so every search answers "No files found" here.
        Step("glob.none", "glob", {"pattern": "*.rs"}),
    ],
    "codex": [
        *_shell("exec_command", key="cmd"),
        *[Step(label, "apply_patch", _patch(body)) for label, body in _PATCHES],
        Step("shell.read_after_write", "exec_command", {"cmd": "cat made.txt"}),
    ],
    "mini-swe-agent": [
        *_shell("bash"),
        Step("shell.missing_file", "bash", {"command": "cat nope.txt"}),
        Step("shell.binary", "bash", {"command": "head -c 16 blob.bin | od -c | head -2"}),
        Step("shell.write", "bash", {"command": "printf 'one\\ntwo\\n' > made.txt"}),
        Step("shell.read_after_write", "bash", {"command": "cat made.txt"}),
        Step("shell.submit", "bash", {"command": SUBMIT}),
    ],
}


def expand(args: dict[str, Any] | str, ws: Path) -> dict[str, Any] | str:
    """`args` with `{ws}` replaced by the workspace path."""
    if isinstance(args, str):
        return args.replace("{ws}", str(ws))
    text = json.dumps(args).replace("{ws}", str(ws))
    return dict(json.loads(text))


#: Per-run details in tool results: (pattern, replacement), applied after the paths.
_VOLATILE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(Process Group PGID: )\d+"), r"\1<PGID>"),
    (re.compile(r"(Background PIDs: )[\d, ]+"), r"\1<PID>"),
    (re.compile(r"(Wall time: )\d+(\.\d+)?( seconds)"), r"\1<T>\3"),
    (re.compile(r"(Chunk ID: )[0-9a-f]+"), r"\1<ID>"),
    (re.compile(r"(Original token count: )\d+"), r"\1<N>"),
    # Where a client saved a too-long output (its own per-session folders and file ids).
    (re.compile(r"((?:S|s)aved to: )\S+"), r"\1<SAVED_OUTPUT>"),
    # A background task's id and output file (Claude Code moves a timed-out command there).
    (re.compile(r"(in background with ID: )\w+"), r"\1<TASK>"),
    (re.compile(r"(Output is being written to: )\S+?(\.?)(?= )"), r"\1<TASK_OUTPUT>\2"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b(?= ?(elapsed|\)))"), "<T>"),
]


#: Steps whose kept lines differ from run to run upstream: these clients cut a long output
#: while it still streams, so which of the 40,000 numbers survive (and where the last one is
#: cut) depends on timing (two captures of opencode kept 30573-32571 and 29890-31888). Their
#: comparison keeps the structure and markers and folds each run of number lines.
STREAMED_CUT: frozenset[tuple[str, str]] = frozenset(
    {("qwen-code", "shell.long"), ("opencode", "shell.long")}
)
_NUMBER_LINES = re.compile(r"\d+(?:\n\d+)+\n?")


def fold_numbers(text: str) -> str:
    """`text` with each run of two or more number-only lines replaced by `<NUMBERS>`."""
    return _NUMBER_LINES.sub("<NUMBERS>", text)


def normalise(text: str, *, ws: Path, home: Path | None = None) -> str:
    """`text` with the workspace (and home) paths and per-run numbers replaced."""
    for real in {str(ws), str(ws.resolve())}:
        text = text.replace(real, "<WORKSPACE>")
    if home is not None:
        text = text.replace(str(home), "<HOME>")
    for pattern, marker in _VOLATILE:
        text = pattern.sub(marker, text)
    return text
