"""Every request says who sends it, on every wire: `originator` as Codex exec sends it (or the
value the Codex SDK puts in CODEX_INTERNAL_ORIGINATOR_OVERRIDE), and a User-Agent naming
oiexec and its version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oiexec import __version__
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply

WIRES = pytest.mark.parametrize("wire", ["responses", "chat", "messages"])


@WIRES
def test_requests_carry_codex_execs_originator_and_an_oiexec_user_agent(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    model_server.enqueue(reply("hello"))

    result = run_cli([*exec_args(model_server, wire=wire), "hi"], cwd=repo)

    assert result.returncode == 0, result.stderr
    (request,) = model_server.model_requests
    assert request.headers["originator"] == "codex_exec"
    agent = request.headers["user-agent"]
    assert agent.startswith(f"oiexec/{__version__} (")
    assert re.fullmatch(r"oiexec/\S+ \(\S+ \S+; \S+\) python/\d+\.\d+\.\d+", agent), agent


@WIRES
def test_the_codex_sdks_originator_override_is_sent_as_it_is(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    model_server.enqueue(reply("hello"), reply("hello again"))
    args = [*exec_args(model_server, wire=wire), "hi"]

    sdk = run_cli(args, cwd=repo, env={"CODEX_INTERNAL_ORIGINATOR_OVERRIDE": "codex_sdk_ts"})
    empty = run_cli(args, cwd=repo, env={"CODEX_INTERNAL_ORIGINATOR_OVERRIDE": ""})

    assert sdk.returncode == 0 and empty.returncode == 0, sdk.stderr + empty.stderr
    first, second = model_server.model_requests
    assert first.headers["originator"] == "codex_sdk_ts"
    assert second.headers["originator"] == "codex_exec"  # an empty variable counts as unset
