"""The classic harness runtimes: real persistent interpreter processes."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.core.context import ToolContext
from oiexec.core.errors import SandboxUnavailable
from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.tools.interpreters import InterpreterPool
from oiexec.tools.process import group_alive
from tests.conftest import MakeToolContext


def _ctx(
    tool_context: MakeToolContext, tmp_path: Path, sandbox: object | None = None
) -> ToolContext:
    """A context whose commands get only PATH, HOME and LANG."""
    return tool_context(
        tmp_path,
        sandbox=sandbox,  # type: ignore[arg-type]
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"},
    )


@pytest.fixture
def pool(tmp_path: Path, tool_context: MakeToolContext) -> Iterator[InterpreterPool]:
    ctx = _ctx(tool_context, tmp_path)
    pool = InterpreterPool(ctx)
    yield pool
    ctx.cleanup.close()


def test_python_state_persists_between_calls(pool: InterpreterPool, tmp_path: Path) -> None:
    first = pool.run(
        "python", "import os\nx = 41\nos.chdir('sub') if os.path.isdir('sub') else None"
    )
    assert first.exit_ok, first
    second = pool.run("python", "x += 1\nprint('x is', x)\nos.getcwd()")
    assert second.exit_ok
    assert second.output.splitlines() == ["x is 42", repr(str(tmp_path))]


def test_python_cwd_change_is_kept(pool: InterpreterPool, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "marker.txt").write_text("here")
    pool.run("python", "import os; os.chdir('sub')")
    result = pool.run("py", "print(open('marker.txt').read())")
    assert result.output == "here\n"


def test_python_exception_reports_traceback_and_state_survives(pool: InterpreterPool) -> None:
    pool.run("python", "value = 'kept'")
    result = pool.run("python", "def f():\n    return 1 / 0\n\nf()")
    assert not result.exit_ok
    assert "Traceback (most recent call last)" in result.output
    assert "ZeroDivisionError: division by zero" in result.output
    assert "return 1 / 0" in result.output  # the model sees its own line
    assert "_run" not in result.output  # the driver's frames are hidden
    assert pool.run("python", "print(value)").output == "kept\n"


def test_python_syntax_error_is_reported(pool: InterpreterPool) -> None:
    result = pool.run("python", "def broken(:\n    pass")
    assert not result.exit_ok
    assert "SyntaxError" in result.output


def test_python_infinite_loop_is_interrupted_and_state_kept(pool: InterpreterPool) -> None:
    pool.run("python", "counter = 7")
    started = time.monotonic()
    result = pool.run("python", "while True:\n    pass", timeout=1.0)
    assert time.monotonic() - started < 5
    assert not result.exit_ok
    assert result.error is not None and "timed out" in result.error
    assert "KeyboardInterrupt" in result.output
    assert "state is kept" in result.output
    after = pool.run("python", "print(counter * 6)")
    assert after.exit_ok and after.output == "42\n"


def test_python_stdin_is_not_the_protocol(pool: InterpreterPool) -> None:
    result = pool.run("python", "import sys\nprint(repr(sys.stdin.read()))")
    assert result.output == "''\n"
    assert pool.run("python", "print('still alive')").output == "still alive\n"


def test_exit_restarts_the_runtime_with_fresh_state(pool: InterpreterPool) -> None:
    pool.run("python", "lost = 1")
    died = pool.run("python", "import os\nos._exit(3)")
    assert not died.exit_ok
    assert "runtime exited" in (died.error or "")
    fresh = pool.run("python", "print('lost' in globals())")
    assert fresh.output == "False\n"


def test_output_is_capped(tmp_path: Path, tool_context: MakeToolContext) -> None:
    ctx = _ctx(tool_context, tmp_path)
    pool = InterpreterPool(ctx, output_cap=2_000)
    try:
        result = pool.run("python", "print('a' * 50_000)\nprint('THE END')")
        assert result.exit_ok
        assert len(result.output) < 3_000
        assert "characters of output omitted" in result.output
        assert result.output.rstrip().endswith("THE END")
    finally:
        pool.close()


def test_shell_keeps_cwd_and_variables_and_reports_exit_codes(
    pool: InterpreterPool, tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    assert pool.run("shell", "cd d && GREETING=hello").exit_ok
    result = pool.run("bash", 'echo "$GREETING from $(basename "$PWD")"')
    assert result.output == "hello from d\n"
    failing = pool.run("sh", "echo oops >&2; false")
    assert not failing.exit_ok
    assert "oops" in failing.output and "[exit code 1]" in failing.output


def test_shell_timeout_restarts_the_runtime(pool: InterpreterPool) -> None:
    pool.run("shell", "MARK=set")
    result = pool.run("shell", "sleep 30", timeout=0.5)
    assert not result.exit_ok and "restarted" in result.output
    assert pool.run("shell", 'echo "[$MARK]"').output == "[]\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_javascript_state_errors_and_timeouts(pool: InterpreterPool) -> None:
    assert pool.run("javascript", "let total = 40; var fs = require('fs');").exit_ok
    assert pool.run("js", "total += 2; console.log(total)").output == "42\n"
    error = pool.run("node", "undefinedFunction()")
    assert not error.exit_ok and "ReferenceError" in error.output
    looped = pool.run("javascript", "while (true) {}", timeout=0.5)
    assert not looped.exit_ok
    assert pool.run("javascript", "console.log(total)").output == "42\n"


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby is not installed")
def test_ruby_state_is_kept(pool: InterpreterPool) -> None:
    assert pool.run("ruby", "x = 20").exit_ok
    assert pool.run("ruby", "puts x + 22").output == "42\n"


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
def test_r_state_is_kept(pool: InterpreterPool) -> None:
    assert pool.run("r", "x <- 20").exit_ok
    assert pool.run("R", "cat(x + 22, '\\n')").output.strip() == "42"


def test_unknown_and_missing_languages_are_clear_errors(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    ctx = _ctx(tool_context, tmp_path)
    ctx.env["PATH"] = str(tmp_path / "empty-bin")  # nothing installed but the runner's Python
    pool = InterpreterPool(ctx)
    try:
        unknown = pool.run("cobol", "DISPLAY 'HI'.")
        assert not unknown.exit_ok
        assert unknown.error is not None
        assert "Unknown language `cobol`" in unknown.error and "python" in unknown.error
        missing = pool.run("ruby", "puts 1")
        assert missing.error is not None and "ruby is not installed" in missing.error
        assert pool.available() == ["python"]
        assert pool.run("python", "print(6 * 7)").output == "42\n"
    finally:
        pool.close()


def test_close_kills_every_runtime_and_its_children(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    ctx = _ctx(tool_context, tmp_path)
    pool = InterpreterPool(ctx)
    pool.run("python", "import subprocess\nchild = subprocess.Popen(['sleep', '60'])")
    pool.run("shell", "sleep 60 &")
    pids = [int(pool.run("python", "print(child.pid)").output)]
    groups = [runtime.session.pid for runtime in pool._runtimes.values()]
    assert len(groups) == 2 and all(group_alive(g) for g in groups)
    ctx.cleanup.close()  # the run ending closes the pool
    assert not any(group_alive(g) for g in groups)
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)
    closed = pool.run("python", "print(1)")
    assert not closed.exit_ok and "closed" in (closed.error or "")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


class _RecordingSandbox:
    """Prepares commands like NoSandbox but records them and runs `after` hooks."""

    backend = "recording"

    def __init__(self, tmp_path: Path, *, refuse: bool = False) -> None:
        self.policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path)
        self.argvs: list[list[str]] = []
        self.afters = 0
        self.refuse = refuse

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        if self.refuse:
            raise SandboxUnavailable("no confinement backend works here")
        self.argvs.append(argv)

        def after() -> list[str]:
            self.afters += 1
            return []

        return PreparedCommand(argv=argv, env=env, cwd=cwd, after=after)

    def describe(self) -> dict[str, object]:
        return {}


def test_runtimes_start_through_the_sandbox_seam(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    sandbox = _RecordingSandbox(tmp_path)
    ctx = _ctx(tool_context, tmp_path, sandbox)
    pool = InterpreterPool(ctx)
    pool.run("python", "a = 1")
    pool.run("python", "a += 1")
    assert len(sandbox.argvs) == 1  # one process for the whole run
    pool.close()
    assert sandbox.afters == 1

    refusing = InterpreterPool(
        _ctx(tool_context, tmp_path, _RecordingSandbox(tmp_path, refuse=True))
    )
    refused = refusing.run("python", "print(1)")
    assert not refused.exit_ok
    assert refused.error is not None and "sandbox unavailable" in refused.error
