"""Shared fixtures: an isolated home, real git repos, the real CLI as a subprocess, the
scripted model server, and the `ToolContext` tools run in."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from hypothesis import settings

from oiexec.core.context import ItemEmitter, ToolContext
from oiexec.core.events import ThreadEvent
from oiexec.core.policy import Sandbox, SandboxMode, SandboxPolicy
from oiexec.sandbox.nosandbox import NoSandbox
from tests.support import cli_client
from tests.support.model_server import ModelServer, model_server  # noqa: F401

# Property-based tests: a small default budget keeps the suite inside its time; a long
# search is `pytest --hypothesis-profile long` (hypothesis's own option). No deadline: a
# loaded CI machine must not turn a slow example into a failure.
settings.register_profile("quick", max_examples=25, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile("quick")

_SCRUBBED_PREFIXES = (
    "OPENAI_",
    "CODEX_",
    "OPENINTERPRETER_",
    "OIEXEC_",
    "ANTHROPIC_",
    "GITHUB_",
)


#: The files whose tests take longest (several CLI runs each, sandboxes, MCP servers, slow
#: streams), from `pytest --durations`. They run first, so that no worker is left finishing a
#: long test while the others are idle; a file missing here only runs later.
SLOW_FIRST = (
    "tests/providers/test_faults.py",
    "tests/batch/test_matrix_e2e.py",
    "tests/sandbox/test_runner_programs.py",
    "tests/harness/test_e2e.py",
    "tests/harness/test_mcp_harnesses.py",
    "tests/sandbox/test_no_listeners.py",
    "tests/sandbox/test_bwrap_hardening.py",
    "tests/mcp/test_calls.py",
    "tests/sandbox/test_runner_reads.py",
    "tests/sdk/test_sdk.py",
    "tests/sandbox/test_abstract_sockets.py",
    "tests/extensions/test_hooks.py",
    "tests/mcp/test_approval.py",
    "tests/examples/test_batch_examples.py",
    "tests/cli/test_compaction.py",
    "tests/cli/test_config_means_what_it_says.py",
    "tests/cli/test_exec_exit_codes.py",
    # Last of these: Jest, which it needs, is being installed from the start (_prefetch_jest).
    "tests/cli/test_from_junit.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT as a terminal gives it, and the package byte-compiled once (below).

    A shell without job control (a CI step's `cmd &`, `nohup`) starts background commands
    with SIGINT ignored, and an ignored signal stays ignored across exec: the runners the
    tests start and interrupt with SIGINT would never see it. Every process, workers
    included, puts Python's own handler back, which its children then start with."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _compile_once(config)
    _prefetch_jest(config)


def _prefetch_jest(config: pytest.Config) -> None:
    """Start installing Jest (the --from-junit tests', from the npm registry: ~25 s on a fresh
    clone, nearly all of it waiting on the network) beside the suite instead of in a worker's
    way. It runs under the lock `jest_installed` takes, and installs only what is not there:
    a worker needing Jest waits for it, or installs it itself if this one failed."""
    if hasattr(config, "workerinput") or shutil.which("npm") is None:
        return
    if shutil.which("flock") is None:
        return
    from tests.support.junit_reports import JEST_DIR

    if (JEST_DIR / "node_modules" / "jest-junit").is_dir():
        return
    script = "test -d node_modules/jest-junit || npm ci --no-audit --no-fund --loglevel=error"
    subprocess.Popen(
        ["flock", str(JEST_DIR / ".install.lock"), "sh", "-c", script],
        cwd=JEST_DIR,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _compile_once(config: pytest.Config) -> None:
    """Byte-compile the package and the test helpers once, before any test starts a process.

    Every test runs with PYTHONDONTWRITEBYTECODE (below), and an editable install is never
    compiled by pip: without this each CLI process the suite starts (well over a thousand)
    compiled the runner's ~290 modules from source again, ~150 ms of CPU each. The files are
    the repository's own, unchanged while the suite runs, so their .pyc cannot go stale
    the way a workspace file the scripted model edits within a second can."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    root = Path(__file__).resolve().parent.parent
    for tree in (root / "oiexec", root / "tests" / "support"):
        compileall.compile_dir(tree, quiet=1, workers=0)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Parallel when pytest-xdist is installed, plain sequential pytest when it is not (so
    `addopts` cannot name its options); an explicit `-n` or `--dist` wins. Two workers per
    core: the suite waits (on CLI runs, sandboxes, servers, streams) about half its time, so
    with one worker per core a core sat idle whenever its worker waited (2 cores: 307-335 s
    against 381-439 s). Work stealing: an idle worker takes queued tests from a busy one, so
    the run ends when the work does rather than when the unluckiest worker's share does.
    (The extra worker was tried before and reverted: under its load a batch task sometimes
    outlived SIGTERM. That was a lock a signal could leave held in the stream's idle clock,
    now fixed, `tests/providers/test_idle_interrupt.py`.)"""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if getattr(config.option, "numprocesses", None) is None:
        config.option.numprocesses = 2 * len(os.sched_getaffinity(0))
    if getattr(config.option, "dist", "no") == "no":
        config.option.dist = "worksteal"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of `SLOW_FIRST` first, in its order; the rest keep their order. Every
    worker sorts the same collection the same way, as xdist requires."""
    rank = {path: index for index, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HOME and OPENINTERPRETER_HOME, no provider keys, fast retries."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES) or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENINTERPRETER_HOME", str(home / ".openinterpreter"))
    monkeypatch.setenv("OIEXEC_RETRY_BASE_DELAY_MS", "1")
    # The scripted model edits and re-runs within one second; a stale .pyc (same size, same
    # mtime second) would hide the fix.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    # Commands the model runs call `python`/`pytest`; with HOME moved, pyenv-style shims break,
    # so the interpreter running the tests comes first. Not its bin directory: the runner hides
    # its own virtualenv's bin from commands (they must get the project's python), so scripts
    # that call this interpreter by path stand in for it, as a project's venv would.
    monkeypatch.setenv("PATH", f"{_command_shims()}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    # Inside GitLab CI the transcript would fold turns into sections (output/ci).
    monkeypatch.delenv("GITLAB_CI", raising=False)
    # A suite run in a GitLab `parallel:` job or a Kubernetes Indexed Job: `batch` would take
    # its shard from these and run a slice of each test's tasks.
    for name in ("CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def oi_home() -> Path:
    path = Path(os.environ["OPENINTERPRETER_HOME"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


BUGGY_CALC = "def add(a, b):\n    return a - b\n"
FIXED_CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    'if __name__ == "__main__":\n    unittest.main()\n'
)
FIX_PATCH = (
    "*** Begin Patch\n*** Update File: calc.py\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n*** End Patch\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo with one commit and a failing unit test (`python -m unittest`)."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "calc.py").write_text(BUGGY_CALC)
    (path / "test_calc.py").write_text(TEST_CALC)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def items(self, item_type: str, event: str = "item.completed") -> list[dict[str, Any]]:
        return [
            e["item"] for e in self.events if e["type"] == event and e["item"]["type"] == item_type
        ]


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path,
    input: str | bytes | None = "",
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> CliResult:
    """Runs the real `interpreter` CLI in a process of its own (stdin closed unless `input`),
    forked from the worker's preloaded CLI server where that is the same (`cli_client`)."""
    full_env = {**os.environ, **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    code, out, err = cli_client.run(list(args), cwd=cwd, data=data, env=full_env, timeout=timeout)
    return CliResult(code, out.decode(), err.decode())


@pytest.fixture
def cli() -> Iterator[Any]:
    yield run_cli


def exec_args(
    server: ModelServer, *extra: str, wire: str = "responses", **provider: Any
) -> list[str]:
    """`exec` with the scripted provider, JSON output and danger-full-access (tests that need
    the sandbox pass `-s` themselves, later flags win)."""
    return [
        "exec",
        "--json",
        "-s",
        "danger-full-access",
        *server.config_args(wire_api=wire, **provider),  # type: ignore[arg-type]
        *extra,
    ]


class MakeToolContext(Protocol):
    def __call__(
        self,
        cwd: Path,
        *,
        mode: SandboxMode = "danger-full-access",
        policy: SandboxPolicy | None = None,
        sandbox: Sandbox | None = None,
        events: list[ThreadEvent] | None = None,
        env: dict[str, str] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> ToolContext: ...


@pytest.fixture
def tool_context() -> Iterator[MakeToolContext]:
    """Builds the `ToolContext` a tool runs in: on `cwd`, unconfined (`NoSandbox`) under
    `policy` (else `mode` on `cwd`) unless a `sandbox` is given, its items appended to
    `events`, commands getting `env` (else nothing), warnings dropped unless `warn`. Every
    context's cleanup (process-group kills, pools) runs when the test ends."""
    made: list[ToolContext] = []

    def make(
        cwd: Path,
        *,
        mode: SandboxMode = "danger-full-access",
        policy: SandboxPolicy | None = None,
        sandbox: Sandbox | None = None,
        events: list[ThreadEvent] | None = None,
        env: dict[str, str] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> ToolContext:
        if sandbox is None:
            sandbox = NoSandbox(policy or SandboxPolicy(mode=mode, cwd=cwd))
        ctx = ToolContext(
            cwd=cwd,
            sandbox=sandbox,
            items=ItemEmitter(events.append if events is not None else lambda _event: None),
            env={} if env is None else env,
            warn=warn or (lambda _message: None),
        )
        made.append(ctx)
        return ctx

    yield make
    for ctx in reversed(made):
        ctx.cleanup.close()


def _command_shims() -> Path:
    """`python`, `python3` and `pytest` scripts running the tests' interpreter, in a directory
    beside the virtualenv's bin (inside its prefix but not a directory the runner hides, and
    outside /tmp, which the sandbox replaces). Written once; concurrent workers write the
    same bytes and rename them into place."""
    if sys.prefix == sys.base_prefix:
        return Path(sys.executable).parent  # not a virtualenv: the runner hides nothing
    shims = Path(sys.prefix) / "oiexec-test-shims"
    shims.mkdir(exist_ok=True)
    scripts = {
        "python": f'exec "{sys.executable}" "$@"\n',
        "python3": f'exec "{sys.executable}" "$@"\n',
        "pytest": f'exec "{sys.executable}" -m pytest "$@"\n',
    }
    for name, body in scripts.items():
        target = shims / name
        text = "#!/bin/sh\n" + body
        if target.exists() and target.read_text() == text:
            continue
        staging = shims / f".{name}.{os.getpid()}"
        staging.write_text(text)
        staging.chmod(0o755)
        staging.replace(target)
    return shims
