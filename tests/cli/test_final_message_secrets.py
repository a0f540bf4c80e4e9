"""A model that echoes the provider key (plainly, base64-encoded at any alignment inside a
longer blob, in either alphabet, or hex-encoded) gets it written nowhere: not on stdout (the
answer or the JSONL stream), not in `-o`, JUnit, the session rollout, the run log or a batch's
files. Secrets are masked *before* any cut to a length, so a server error body cut at 500
characters or a garbled event cut at 120 leaves no fragment of a key either."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable
from pathlib import Path

from tests.batch.conftest import write_tasks
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, fault, raw_body, reply

#: A window this long of any encoded form must not survive (the redaction may leave the one
#: or two characters at either end of a base64 form, which mix in neighbouring bytes).
_WINDOW = 8


def _key() -> str:
    # `~` and `?` make the standard and URL-safe base64 alphabets differ (`+`/`-`, `/`/`_`).
    return f"sk-live-~~~???-{uuid.uuid4().hex}"


def _b64_blobs(key: str) -> list[str]:
    """The key base64-encoded inside longer data at each of the three alignments, in both
    alphabets, padded and not."""
    blobs = []
    for lead in range(3):
        data = b"Q" * lead + key.encode() + b"!tail"
        std = base64.b64encode(data).decode()
        blobs += [std, base64.urlsafe_b64encode(data).decode().rstrip("=")]
    return blobs


def _stable_forms(key: str) -> list[str]:
    """What each blob holds of the key alone (the characters no neighbouring byte touches),
    plus hex: the strings whose windows must not be written anywhere."""
    raw = key.encode()
    forms = [key, raw.hex(), raw.hex().upper()]
    for lead in range(3):
        encoded = base64.b64encode(bytes(lead) + raw).decode()
        middle = encoded[-(-8 * lead // 6) : 8 * (lead + len(raw)) // 6]
        forms += [middle, middle.replace("+", "-").replace("/", "_")]
    return forms


def _leaks(key: str, texts: Iterable[tuple[str, str]]) -> list[str]:
    """`where: window` for every window of a form of the key found in the texts."""
    windows = {form[i : i + _WINDOW] for form in _stable_forms(key) for i in range(len(form) - 7)}
    return [f"{where}: {w}" for where, text in texts for w in windows if w in text]


def _files(*roots: Path) -> list[tuple[str, str]]:
    return [
        (str(path), path.read_text(errors="replace"))
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.parts
    ]


def _echoing_model(server: ModelServer, key: str, runs: int) -> None:
    """Each run: reasoning, commentary and a plan that echo the key, then a final answer
    carrying it in every form."""
    final = "\n".join(["the key is " + key, *_b64_blobs(key), key.encode().hex()])
    final += "\n" + key.encode().hex().upper()
    for _ in range(runs):
        server.enqueue(
            reply(
                f"commentary: {key}",
                reasoning=f"thinking about {key}",
                tool_calls=[
                    call("update_plan", {"plan": [{"step": f"use {key}", "status": "pending"}]})
                ],
            ),
            reply(final),
        )


def test_an_echoed_key_is_written_nowhere_in_any_encoding(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    key = _key()
    _echoing_model(model_server, key, runs=2)
    out = tmp_path / "reports"
    out.mkdir()
    env = {"SCRIPTED_KEY": key}
    provider = exec_args(model_server, env_key="SCRIPTED_KEY")
    reports = ["-o", str(out / "last.txt"), "--junit", str(out / "junit.xml")]
    # The human transcript (the answer alone on stdout), then the JSONL stream.
    human = run_cli([*[a for a in provider if a != "--json"], *reports, "x"], cwd=repo, env=env)
    assert human.returncode == 0, human.stderr
    jsonl = run_cli([*provider, "x"], cwd=repo, env=env)
    assert jsonl.returncode == 0, jsonl.stderr
    # The model did send every form: what is missing below was masked, not never there.
    assert key in json.dumps(model_server.bodies[-1])
    assert human.stdout.count("[REDACTED]") == 9  # plain, six base64 blobs, two hex
    assert {"agent_message", "reasoning", "todo_list"} <= {
        e["item"]["type"] for e in jsonl.events if e["type"] == "item.completed"
    }
    written = [
        ("human stdout", human.stdout),
        ("human stderr", human.stderr),
        ("jsonl stdout", jsonl.stdout),
        ("jsonl stderr", jsonl.stderr),
        *_files(out, oi_home),
    ]
    assert any(where.endswith("last.txt") for where, _ in written)
    assert any("/sessions/" in where for where, _ in written)
    assert _leaks(key, written) == []


def test_a_key_in_a_server_error_leaves_no_fragment_after_the_cut(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    """The server's message is cut at 500 characters and a garbled event at 120: the key
    sits across each cut."""
    key = _key()
    env = {"SCRIPTED_KEY": key}
    args = exec_args(model_server, env_key="SCRIPTED_KEY", request_max_retries=0)
    model_server.enqueue(fault(401, message="x" * (500 - len(key) // 2) + key + " rest"))
    refused = run_cli([*args, "x"], cwd=repo, env=env)
    assert refused.returncode != 0
    [failed] = [e for e in refused.events if e["type"] == "turn.failed"]
    assert "xxxx" in failed["error"]["message"]  # the server's message was shown, cut
    garbled = "data: " + "{" * (120 - len(key) // 2) + key + "\n\n"
    model_server.enqueue(*[raw_body(garbled)] * 6)
    cut = run_cli(
        [*args, "-c", "model_providers.scripted.stream_max_retries=0", "x"], cwd=repo, env=env
    )
    assert cut.returncode != 0
    assert "not JSON" in cut.stdout
    written = [
        ("401 stdout", refused.stdout),
        ("401 stderr", refused.stderr),
        ("garbled stdout", cut.stdout),
        ("garbled stderr", cut.stderr),
        *_files(oi_home),
    ]
    assert _leaks(key, written) == []


def test_a_batch_writes_no_echoed_key(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    key = _key()
    _echoing_model(model_server, key, runs=1)
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "echo", "prompt": "x", "repo": str(repo)}])
    out = tmp_path / "out"
    args = [
        "batch",
        str(tasks),
        "--out",
        str(out),
        "-s",
        "read-only",
        *model_server.config_args(request_max_retries=0, env_key="SCRIPTED_KEY"),
    ]
    result = run_cli(args, cwd=repo, env={"SCRIPTED_KEY": key})
    assert result.returncode == 0, result.stderr + (out / "echo" / "stderr.log").read_text()
    files = _files(out)
    assert {"last-message.txt", "events.jsonl", "junit.xml", "result.json"} <= {
        Path(where).name for where, _ in files
    }
    assert "[REDACTED]" in (out / "echo" / "last-message.txt").read_text()
    assert _leaks(key, [("stdout", result.stdout), ("stderr", result.stderr), *files]) == []
