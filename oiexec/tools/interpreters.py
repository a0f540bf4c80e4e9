"""Persistent language runtimes for the `classic` harness (the original Open Interpreter).

One long-lived process per language keeps state between calls (variables, imports, cwd).
Each is started through the command runner's `launch`, like the persistent shell. A small
driver inside the process reads one request per line, `<token> <timeout_ms> <payload>`
(the code, base64 or hex encoded so it is one line), runs it, and prints `\\x1f<token> <status>`
when done; everything before that marker is the call's output.

On timeout, Python and Ruby get SIGINT (the driver catches it, state survives); JavaScript
runs under a `vm` timeout that also keeps state. When that does not bring the marker back,
or for the shell and R, the runtime is killed and restarted on the next call.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from oiexec.core.context import ToolContext
from oiexec.core.policy import PreparedCommand
from oiexec.tools.command import Declined, launch, stop
from oiexec.tools.process import ProcessSession, StdinClosed

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "DEFAULT_TIMEOUT",
    "LANGUAGE_ALIASES",
    "ExecutionResult",
    "InterpreterPool",
]

DEFAULT_TIMEOUT = 120.0
#: Characters of output kept per call (head and tail halves).
DEFAULT_OUTPUT_CAP = 50_000
#: How long an interrupted runtime gets to report back before it is restarted.
_INTERRUPT_GRACE = 3.0
_POLL = 0.02
_MARK = "\x1f"

# --- drivers (project-written; each loops: read request, run, print the marker) -----------

_PYTHON_DRIVER = r"""
import ast, base64, linecache, os, sys, traceback
_proto = os.fdopen(os.dup(0), "r", encoding="utf-8")
_null = os.open(os.devnull, os.O_RDONLY); os.dup2(_null, 0)
sys.stdin = open(os.devnull, "r")
_ns = {"__name__": "__main__", "__builtins__": __builtins__}
def _run(code):
    linecache.cache["<code>"] = (len(code), None, code.splitlines(True), "<code>")
    tree = ast.parse(code, "<code>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<code>", "exec"), _ns)
    if last is not None:
        value = eval(compile(last, "<code>", "eval"), _ns)
        if value is not None:
            print(repr(value))
while True:
    line = _proto.readline()
    if not line:
        break
    token, _timeout, payload = line.split(" ", 2)
    status = "ok"
    try:
        _run(base64.b64decode(payload).decode("utf-8"))
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            pass
        else:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != "<code>":
                tb = tb.tb_next
            traceback.print_exception(type(exc), exc, tb)
    sys.stdout.flush(); sys.stderr.flush()
    sys.stdout.write("\x1f" + token + " " + status + "\n"); sys.stdout.flush()
"""

_NODE_DRIVER = r"""
const vm = require("vm");
const readline = require("readline");
globalThis.require = require;
const rl = readline.createInterface({ input: process.stdin, terminal: false });
const queue = [];
let busy = false;
function done(token, status) { process.stdout.write("\x1f" + token + " " + status + "\n"); }
async function runOne(line) {
  const first = line.indexOf(" "), second = line.indexOf(" ", first + 1);
  const token = line.slice(0, first);
  const timeout = Number(line.slice(first + 1, second));
  const code = Buffer.from(line.slice(second + 1), "base64").toString("utf8");
  let status = "ok";
  try {
    const options = { filename: "<code>", timeout: timeout > 0 ? timeout : undefined };
    let value = vm.runInThisContext(code, options);
    if (value && typeof value.then === "function") value = await value;
    if (value !== undefined) console.log(require("util").inspect(value));
  } catch (err) {
    const timedOut = err && err.code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
    status = timedOut ? "interrupted" : "error";
    console.error(err && err.stack ? err.stack : String(err));
  }
  done(token, status);
}
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) await runOne(queue.shift());
  busy = false;
}
rl.on("line", (line) => { queue.push(line); pump(); });
"""

_RUBY_DRIVER = r"""
$stdout.sync = true; $stderr.sync = true
proto = $stdin.dup
$stdin.reopen(File::NULL)
__oi_binding = binding
while (line = proto.gets)
  token, _timeout, payload = line.chomp.split(" ", 3)
  status = "ok"
  begin
    value = eval(payload.unpack1("m"), __oi_binding, "<code>")
    puts value.inspect unless value.nil?
  rescue Interrupt => e
    status = "interrupted"; $stderr.puts e.full_message(highlight: false)
  rescue SystemExit => e
    status = e.success? ? "ok" : "error"
  rescue Exception => e
    status = "error"; $stderr.puts e.full_message(highlight: false)
  end
  $stdout.write("\x1f" + token + " " + status + "\n")
end
"""

_R_DRIVER = r"""
proto <- file("stdin", open = "r")
repeat {
  line <- readLines(proto, n = 1)
  if (length(line) == 0) break
  parts <- strsplit(line, " ", fixed = TRUE)[[1]]
  hex <- parts[3]
  n <- nchar(hex)
  pairs <- substring(hex, seq(1, n, 2), seq(2, n, 2))
  code <- if (n > 0) rawToChar(as.raw(strtoi(pairs, 16L))) else ""
  status <- "ok"
  tryCatch({
    exprs <- parse(text = code, keep.source = FALSE)
    for (e in exprs) {
      res <- withVisible(eval(e, envir = globalenv()))
      if (res$visible) print(res$value)
    }
  }, error = function(err) {
    status <<- "error"
    message("Error: ", conditionMessage(err))
  })
  flush(stdout()); flush(stderr())
  cat("\x1f", parts[1], " ", status, "\n", sep = "")
  flush(stdout())
}
"""

_SHELL_DRIVER = r"""
while IFS=' ' read -r __oi_token __oi_timeout __oi_payload; do
  __oi_code=$(printf '%s' "$__oi_payload" | base64 -d)
  eval "$__oi_code" </dev/null
  __oi_status=$?
  printf '\037%s %s\n' "$__oi_token" "$__oi_status"
done
"""


@dataclass(frozen=True)
class _Language:
    name: str
    programs: tuple[str, ...]
    argv: Callable[[str], list[str]]
    encoding: str = "base64"
    #: SIGINT stops the running code and the driver survives, keeping state.
    interruptible: bool = False
    #: The driver enforces the timeout itself (JavaScript's `vm` timeout).
    self_timed: bool = False


_LANGUAGES: dict[str, _Language] = {
    "python": _Language(
        "python",
        ("python3", "python"),
        lambda exe: [exe, "-u", "-c", _PYTHON_DRIVER],
        interruptible=True,
    ),
    "shell": _Language(
        "shell", ("bash",), lambda exe: [exe, "--noprofile", "--norc", "-c", _SHELL_DRIVER]
    ),
    "javascript": _Language(
        "javascript", ("node",), lambda exe: [exe, "-e", _NODE_DRIVER], self_timed=True
    ),
    "ruby": _Language("ruby", ("ruby",), lambda exe: [exe, "-e", _RUBY_DRIVER], interruptible=True),
    "r": _Language(
        "r", ("Rscript",), lambda exe: [exe, "--vanilla", "-e", _R_DRIVER], encoding="hex"
    ),
}

#: Names models use for each language (lower-cased before lookup).
LANGUAGE_ALIASES: dict[str, str] = {
    "python": "python",
    "python3": "python",
    "py": "python",
    "shell": "shell",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "javascript": "javascript",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "ruby": "ruby",
    "rb": "ruby",
    "r": "r",
}


@dataclass(frozen=True)
class ExecutionResult:
    """What one `run` produced. `error` explains a failure that is not the code's own."""

    output: str
    exit_ok: bool
    error: str | None = None


@dataclass
class _Runtime:
    language: _Language
    session: ProcessSession
    prepared: PreparedCommand
    #: Output read past the previous call's marker (a background writer, usually).
    leftover: str = ""


@dataclass
class _Collected:
    head: str = ""
    tail: str = ""
    dropped: int = 0
    cap: int = DEFAULT_OUTPUT_CAP
    chunks: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        half = self.cap // 2
        if len(self.head) < half:
            room = half - len(self.head)
            self.head += text[:room]
            text = text[room:]
        self.tail += text
        # Keep a little more than half so a marker split across reads is still found.
        excess = len(self.tail) - (half + 256)
        if excess > 0:
            self.tail = self.tail[excess:]
            self.dropped += excess

    def find(self, marker: str) -> tuple[str, str] | None:
        """(output before the marker line, status) once the marker has arrived."""
        text = self.head + self.tail
        at = text.find(marker)
        if at < 0:
            return None
        end = text.find("\n", at)
        if end < 0:
            return None
        status = text[at + len(marker) : end].strip()
        return self._output(text[:at]), status

    def _output(self, text: str) -> str:
        if not self.dropped:
            return text
        half = self.cap // 2
        return (
            f"{text[:half]}\n[... {self.dropped} characters of output omitted ...]\n{text[half:]}"
        )

    def partial(self) -> str:
        return self._output(self.head + self.tail)


class InterpreterPool:
    """The runtimes of one run, started on first use and all killed by `close`."""

    def __init__(self, ctx: ToolContext, *, output_cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self._ctx = ctx
        self._output_cap = output_cap
        self._runtimes: dict[str, _Runtime] = {}
        self._closed = False
        ctx.cleanup.callback(self.close)

    def available(self) -> list[str]:
        """Languages with an installed runtime, in a stable order."""
        return [name for name, lang in _LANGUAGES.items() if self._executable(lang)]

    def run(self, language: str, code: str, timeout: float = DEFAULT_TIMEOUT) -> ExecutionResult:
        """Run `code` in `language`'s persistent runtime; never raises for the code's faults."""
        if self._closed:
            return ExecutionResult("", False, "the interpreter pool is closed")
        name = LANGUAGE_ALIASES.get(language.strip().lower())
        if name is None:
            return ExecutionResult(
                "",
                False,
                f"Unknown language `{language}`. Supported here: {', '.join(self.available())}.",
            )
        runtime = self._runtimes.get(name)
        if runtime is None or runtime.session.exit_code is not None:
            notes = self._stop(name) if runtime is not None else []
            started = self._start(_LANGUAGES[name])
            if isinstance(started, ExecutionResult):
                return started
            runtime = started
            if notes:
                runtime.leftover = "\n".join(notes) + "\n"
        return self._execute(runtime, code, timeout)

    def close(self) -> None:
        """Kill every runtime's process group; later `run` calls fail."""
        self._closed = True
        for name in list(self._runtimes):
            for note in self._stop(name):
                self._ctx.warn(note)

    # --- internals -----------------------------------------------------------------------

    def _executable(self, language: _Language) -> str | None:
        path = self._ctx.env.get("PATH")
        for program in language.programs:
            found = shutil.which(program, path=path)
            if found:
                return found
        if language.name == "python":
            return sys.executable  # the runner's own interpreter is always there
        return None

    def _start(self, language: _Language) -> _Runtime | ExecutionResult:
        exe = self._executable(language)
        if exe is None:
            wanted = " or ".join(f"`{p}`" for p in language.programs)
            return ExecutionResult(
                "",
                False,
                f"{language.name} is not installed here (no {wanted} on PATH). "
                f"Available: {', '.join(self.available())}.",
            )
        try:
            session, prepared = launch(self._ctx, language.argv(exe), env=dict(self._ctx.env))
        except Declined as exc:
            return ExecutionResult("", False, exc.reason)
        except OSError as exc:
            return ExecutionResult("", False, f"could not start {language.name}: {exc}")
        runtime = _Runtime(language, session, prepared)
        self._runtimes[language.name] = runtime
        return runtime

    def _stop(self, name: str) -> list[str]:
        runtime = self._runtimes.pop(name, None)
        if runtime is None:
            return []
        return stop(runtime.session, runtime.prepared)

    def _execute(self, runtime: _Runtime, code: str, timeout: float) -> ExecutionResult:
        language = runtime.language
        remaining = self._ctx.remaining()
        limit = max(0.0, timeout if remaining is None else min(timeout, remaining))
        token = secrets.token_hex(8)
        marker = f"{_MARK}{token} "
        raw = code.encode("utf-8")
        payload = raw.hex() if language.encoding == "hex" else base64.b64encode(raw).decode()
        collected = _Collected(cap=self._output_cap)
        collected.add(runtime.leftover)
        runtime.leftover = ""
        try:
            runtime.session.write(f"{token} {int(limit * 1000)} {payload}\n", timeout=10.0)
        except StdinClosed:
            return self._died(runtime, collected)
        # A self-timed driver interrupts itself; give it a moment to report before we do.
        deadline = time.monotonic() + limit + (1.0 if language.self_timed else 0.0)
        found = self._wait(runtime, collected, marker, deadline)
        if found is not None:
            return self._finished(language, *found)
        if runtime.session.exit_code is not None:
            return self._died(runtime, collected)
        if language.interruptible:
            # The whole group: a child the code started is interrupted too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(runtime.session.pid, signal.SIGINT)
            found = self._wait(runtime, collected, marker, time.monotonic() + _INTERRUPT_GRACE)
            if found is not None:
                output, _status = found
                note = f"[interrupted after {limit:g} seconds; {language.name} state is kept]"
                return ExecutionResult(_join(output, note), False, f"timed out after {limit:g}s")
        notes = self._stop(language.name)
        note = (
            f"[timed out after {limit:g} seconds; the {language.name} runtime was restarted "
            "and its state is lost]"
        )
        return ExecutionResult(
            _join(collected.partial(), note, *notes), False, f"timed out after {limit:g}s"
        )

    def _wait(
        self, runtime: _Runtime, collected: _Collected, marker: str, deadline: float
    ) -> tuple[str, str] | None:
        while True:
            collected.add(runtime.session.take_output())
            found = collected.find(marker)
            if found is not None:
                output, status = found
                text = collected.head + collected.tail
                after = text.find("\n", text.find(marker)) + 1
                runtime.leftover = text[after:]
                return output, status
            exited = runtime.session.exit_code is not None
            if exited or time.monotonic() >= deadline:
                if exited:
                    runtime.session.wait(0)  # drain what is still in flight
                    collected.add(runtime.session.take_output())
                    found = collected.find(marker)
                    if found is not None:
                        return found
                return None
            time.sleep(_POLL)

    def _finished(self, language: _Language, output: str, status: str) -> ExecutionResult:
        if language.name == "shell":
            ok = status == "0"
            return ExecutionResult(
                output if ok else _join(output, f"[exit code {status}]"),
                ok,
            )
        if status == "interrupted":
            return ExecutionResult(
                _join(output, "[interrupted; state is kept]"), False, "timed out"
            )
        return ExecutionResult(output, status == "ok")

    def _died(self, runtime: _Runtime, collected: _Collected) -> ExecutionResult:
        language = runtime.language
        code = runtime.session.wait(1.0)
        notes = self._stop(language.name)
        note = (
            f"[the {language.name} runtime exited (status {code}); "
            "it starts fresh on the next call]"
        )
        return ExecutionResult(
            _join(collected.partial(), note, *notes), False, f"{language.name} runtime exited"
        )


def _join(*parts: str) -> str:
    texts = [p.rstrip("\n") for p in parts if p]
    return "\n".join(texts) + ("\n" if texts else "")
