"""`model_fallbacks` through the real CLI: a transient failure that outlasts the retries moves
the turn to the next model (on another provider and wire here), says so as Codex says a
reroute, and the session remembers it for `resume`; a request the provider refuses does not
move. Resolving the entries is tested in tests/providers/test_fallbacks.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.support.model_server import ModelServer, fault, reply
from tests.support.model_server.server import DEFAULT_MODEL


def _configure(server: ModelServer, home: Path) -> list[str]:
    """The providers and fallbacks in config.toml (which a resumed session's own provider and
    model override, as a `-c` would not); the exec arguments that go with it."""
    (home / "config.toml").write_text(
        'model_provider = "scripted"\n'
        'model_fallbacks = ["backup/backup-model"]\n'
        "[model_providers.scripted]\n"
        f'base_url = "{server.base_url}"\n'
        "request_max_retries = 1\n"
        "[model_providers.backup]\n"
        f'base_url = "{server.base_url}"\n'
        'wire_api = "chat"\n'
    )
    return ["exec", "--json", "-s", "danger-full-access"]


def test_a_5xx_after_the_retries_moves_to_the_next_model_and_resume_stays_there(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    args = _configure(model_server, oi_home)
    model_server.enqueue(
        fault(status=503, message="overloaded"), fault(status=503, message="overloaded")
    )
    model_server.enqueue(reply("answered by the backup"))
    result = run_cli([*args, "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    requests = model_server.model_requests
    assert [r.wire for r in requests] == ["responses", "responses", "chat"]
    assert requests[2].body["model"] == "backup-model"
    warnings = [item["message"] for item in result.items("error")]
    rerouted = [w for w in warnings if w.startswith("model rerouted:")]
    assert len(rerouted) == 1, warnings
    assert rerouted[0].startswith(
        f"model rerouted: scripted/{DEFAULT_MODEL} -> backup/backup-model"
    )
    assert "503" in rerouted[0] and "overloaded" in rerouted[0]
    assert result.items("agent_message")[-1]["text"] == "answered by the backup"

    thread = result.events[0]["thread_id"]
    model_server.enqueue(reply("still the backup"))
    resumed = run_cli([*args, "resume", thread, "more"], cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    last = model_server.model_requests[-1]
    assert (last.wire, last.body["model"]) == ("chat", "backup-model")
    assert not [i for i in resumed.items("error") if "rerouted" in i["message"]]
    shown = run_cli(["sessions", "show", "--json", thread], cwd=repo)
    assert json.loads(shown.stdout)["settings"]["model"] == "backup-model", shown.stdout


def test_a_bad_request_does_not_move(model_server: ModelServer, repo: Path, oi_home: Path) -> None:
    args = _configure(model_server, oi_home)
    model_server.enqueue(fault(status=400, message="bad tool schema"))
    result = run_cli([*args, "go"], cwd=repo)
    assert result.returncode == 1
    assert "bad tool schema" in result.events[-1]["error"]["message"]
    assert len(model_server.model_requests) == 1
    assert not [i for i in result.items("error") if "rerouted" in i["message"]]
