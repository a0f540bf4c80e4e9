"""Property: whatever exec's flags hold (numbers that are inf, nan, negative, huge or words;
`-c` overrides of known keys with any value; text with bytes that are not UTF-8, which
Python holds as lone surrogates; any prompt), `interpreter exec` ends in bounded time with a
documented exit code (2 for flags, 3 for config, 1 for a failed run) and a message, never an
internal error. It runs in-process through click's runner, which reaches the same code as
the installed command (`cli` is the group `main` calls; `main` only maps the error it ends
with to its exit code). No provider key is set, so a run whose flags and config are right
stops at the missing key (exit 3) before any model is asked."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from oiexec.cli import cli
from oiexec.core.errors import ExitCode, OiexecError

#: Seconds one refused run may take (~10 ms once imported; the first example imports the
#: runner, and the machine may be loaded).
_BOUND_S = 10.0
#: What exec may end with here: a failed run, a usage error, a config error.
_DOCUMENTED = {ExitCode.FAILED, ExitCode.USAGE, ExitCode.CONFIG}

_ODD = st.sampled_from(
    [
        *("inf", "-inf", "nan", "NaN", "infinity", "-1", "0", "1e400", "1e-400", "1_000"),
        *(" 7 ", str(2**64), "0x10", "", "\udcff", "1\udcff", "١٢"),
    ]
)
_TEXT = st.text(max_size=12)  # any character, lone surrogates included
_NUMBER_WORDS = _ODD | st.integers().map(str) | st.floats().map(str) | _TEXT
_KEYS = st.sampled_from(
    [
        "check_timeout",
        "check_max_attempts",
        "model_context_window",
        "model_auto_compact_token_limit",
        "tool_output_token_limit",
        "project_doc_max_bytes",
        "sandbox_limits.max_processes",
        "model_pricing.input_per_mtok",
        "model_providers.openai.stream_idle_timeout_ms",
        "model_providers.openai.http_headers.X-A",
        "mcp_servers.m.tool_timeout_sec",
        "profile",
        "model",
        "features.x",
        "tools." + "a." * 100 + "b",
        # Paths and names the run's set-up uses (in the run that reaches the provider).
        "sandbox_workspace_write.writable_roots",
        "program_paths.git",
        "project_doc_fallback_filenames",
        "shell_environment_policy.set.X",
        "shell_environment_policy.include_only",
        "model_providers.openai.query_params.q",
        "default_permissions",
        "sandbox_mode",
    ]
)
_VALUES = (
    _NUMBER_WORDS
    | st.sampled_from(['"é"', "[[[[[[", "{a={a={a=1}}}", '"a\\nb"', '"\\u0000"', "[]"])
    | st.sampled_from(['["/tmp", "a\\u0000b"]', '[".."]', '["/"]', '"/dev/null"', '"/"'])
    | _TEXT
)
_FLAG = st.one_of(
    st.tuples(
        st.sampled_from(
            ["--timeout", "--max-turns", "--max-tokens", "--max-cost", "--max-attempts"]
        ),
        _NUMBER_WORDS,
    ),
    st.tuples(st.just("-c"), st.tuples(_KEYS, _VALUES).map(lambda kv: f"{kv[0]}={kv[1]}")),
    st.tuples(st.sampled_from(["--enable", "--disable", "-m", "-p", "-a", "--check"]), _TEXT),
    st.tuples(st.sampled_from(["-s", "--color"]), _TEXT | st.sampled_from(["read-only", "auto"])),
    st.sampled_from(["--json", "--strict-config", "--ephemeral", "--skip-git-repo-check"]).map(
        lambda flag: (flag,)
    ),
)


@pytest.fixture
def in_repo(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(repo)
    yield repo


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(flags=st.lists(_FLAG, max_size=5), prompt=_TEXT)
@example(flags=[("--timeout", "inf")], prompt="go")
@example(flags=[("--timeout", "1e400")], prompt="go")
@example(flags=[("--max-cost", "nan")], prompt="go")
@example(flags=[("--max-turns", str(2**64))], prompt="go")
@example(flags=[("-c", "model_context_window=0")], prompt="go")
@example(flags=[("-c", "check_timeout=inf"), ("--json",)], prompt="go")
@example(flags=[("-m", "gpt\udcff")], prompt="go")
@example(flags=[], prompt="fix \udcff")
@example(flags=[("-c", 'model_providers.openai.http_headers.X-A="é"')], prompt="go")
@example(flags=[("-c", "tools.x=" + "[" * 5000)], prompt="go")
@example(flags=[("-c", "profile=1")], prompt="go")
@example(flags=[("-p", "\x00")], prompt="0")  # ValueError: embedded null byte
def test_exec_flags_end_with_a_documented_code(
    in_repo: Path, flags: list[tuple[str, ...]], prompt: str
) -> None:
    _check_run(["exec", *(word for flag in flags for word in flag), "--", prompt], _DOCUMENTED)


#: With a key and a provider that refuses the connection, a run whose flags and config are
#: right gets as far as the request (exit 1), or its time limit (exit 5); the sandbox is
#: only built, never used, but may be unavailable (exit 6).
_REACHED = {*_DOCUMENTED, ExitCode.TIMEOUT, ExitCode.SANDBOX_UNAVAILABLE}
_UNREACHABLE = [
    *("-c", 'model_providers.openai.base_url="http://127.0.0.1:9/v1"'),
    *("-c", "model_providers.openai.request_max_retries=0"),
    *("-c", "model_providers.openai.stream_max_retries=0"),
]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(flags=st.lists(_FLAG, max_size=5), prompt=_TEXT)
@example(flags=[("-c", "sandbox_limits.max_processes=9223372036854775807")], prompt="go")
@example(flags=[("-c", 'sandbox_workspace_write.writable_roots=["a\\u0000b"]')], prompt="go")
@example(flags=[("-c", "model_context_window=1"), ("--timeout", "1e-9")], prompt="go")
def test_exec_flags_that_reach_the_provider_end_with_a_documented_code(
    in_repo: Path, monkeypatch: pytest.MonkeyPatch, flags: list[tuple[str, ...]], prompt: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    words = [word for flag in flags for word in flag]
    _check_run(["exec", *words, *_UNREACHABLE, "--", prompt], _REACHED)


def _check_run(args: list[str], documented: set[ExitCode]) -> None:
    start = time.monotonic()
    result = CliRunner().invoke(cli, args, input="")
    assert time.monotonic() - start < _BOUND_S
    error = result.exception
    code: int
    if isinstance(error, OiexecError):
        code = int(error.exit_code)
        error.render().encode("utf-8")  # printable as it is
    else:
        # click's own usage errors end in SystemExit(2) after printing, a run in its exit
        # code; nothing else may end the command (an internal error would be here).
        assert error is None or isinstance(error, SystemExit), result.exc_info
        code = result.exit_code
    event(f"exit {code}")
    assert code in documented, (code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
