"""`resume --last` continues the newest session of the directory whatever its provider, with
its recorded provider and model; a provider given on the resume is a change, applied and
announced (Codex only looks at the configured provider's sessions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.support.model_server import ModelServer, reply


def _turn_contexts(home: Path, thread_id: str) -> list[dict[str, Any]]:
    [path] = (home / "sessions").rglob(f"rollout-*-{thread_id}.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["payload"] for r in records if r["type"] == "turn_context"]


def test_resume_last_takes_the_newest_session_of_any_provider(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    # Two providers in the user's config, neither the configured default (`openai`).
    (oi_home / "config.toml").write_text(
        "".join(
            f'[model_providers.{name}]\nname = "{name}"\nbase_url = "{model_server.base_url}"\n'
            'wire_api = "responses"\n'
            for name in ("alpha", "beta")
        )
    )
    model_server.enqueue(reply("one"), reply("two"), reply("three"), reply("four"))
    base = ["exec", "--json", "-s", "danger-full-access"]
    older = run_cli([*base, "-c", "model_provider=alpha", "-m", "alpha-1", "first"], cwd=repo)
    assert older.returncode == 0, older.stderr
    newest = run_cli([*base, "-c", "model_provider=beta", "-m", "beta-1", "second"], cwd=repo)
    assert newest.returncode == 0, newest.stderr
    thread_id = newest.events[0]["thread_id"]

    resumed = run_cli([*base, "resume", "--last", "again"], cwd=repo, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.events[0]["thread_id"] == thread_id
    assert model_server.bodies[-1]["model"] == "beta-1"
    assert "resume:" not in resumed.stderr  # nothing changed

    switched = run_cli(
        [*base, "-c", "model_provider=alpha", "resume", "--last", "on alpha"], cwd=repo
    )
    assert switched.returncode == 0, switched.stderr
    assert switched.events[0]["thread_id"] == thread_id
    assert "resume: provider beta -> alpha (from -c model_provider)" in switched.stderr
    contexts = _turn_contexts(oi_home, thread_id)
    assert [c["model_provider"] for c in contexts] == ["beta", "beta", "alpha"]
    assert contexts[-1]["overrides"][0]["name"] == "provider"

    # The session's provider is gone from config: the error names the session and the ways on.
    (oi_home / "config.toml").write_text(
        f'[model_providers.beta]\nname = "beta"\nbase_url = "{model_server.base_url}"\n'
    )
    requests = len(model_server.bodies)
    gone = run_cli([*base, "resume", "--last", "again"], cwd=repo)
    assert gone.returncode == 3, gone.stderr
    assert f"the session {thread_id} was made with model provider `alpha`" in gone.stderr
    assert "-c model_provider=ID" in gone.stderr and "Traceback" not in gone.stderr
    assert len(model_server.bodies) == requests
