"""Config that means what it says, through the real CLI: wrong types and empty values stop a
run before any request, trust cannot be borrowed, `--add-dir` under read-only is named,
`OPENAI_BASE_URL` is honoured, and `--oss` picks its model and fails fast without a server."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from oiexec.core.errors import ExitCode
from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, reply


def error_items(result: CliResult) -> list[str]:
    return [str(item["message"]) for item in result.items("error")]


def dead_url() -> str:
    """A local URL nothing listens on (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# --- wrong types and empty values -------------------------------------------------------------


def test_a_string_for_a_boolean_stops_the_run_before_any_request(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    config = oi_home / "config.toml"
    config.write_text('model = "m"\n[sandbox_workspace_write]\nnetwork_access = "yes"\n')
    result = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert result.returncode == ExitCode.CONFIG
    assert (
        f"`sandbox_workspace_write.network_access` in {config}:3: expected a boolean (true or "
        'false), got the string "yes"' in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert model_server.requests == []


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [
        (
            ["-c", "model=123"],
            {},
            3,
            "`model` in -c override: expected a string, got the integer 123",
        ),
        (["-c", "model="], {}, 3, "`model` in -c override: must name a model"),
        (["-m", ""], {}, 2, "-m/--model needs a value, got an empty string"),
        (
            ["-c", 'project_doc_max_bytes="100"'],
            {},
            3,
            'expected an integer, got the string "100" (write it without quotes)',
        ),
        (
            [],
            {"OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS": "yes"},
            3,
            "`sandbox_workspace_write.network_access` in environment variable "
            "OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS: expected a boolean",
        ),
    ],
)
def test_bad_values_on_the_command_line_and_in_the_environment(
    model_server: ModelServer,
    repo: Path,
    args: list[str],
    env: dict[str, str],
    code: int,
    message: str,
) -> None:
    result = run_cli([*exec_args(model_server), *args, "x"], cwd=repo, env=env)
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert model_server.requests == []


def test_an_empty_provider_base_url_is_a_config_error(
    model_server: ModelServer, repo: Path
) -> None:
    result = run_cli([*exec_args(model_server, base_url=""), "x"], cwd=repo)
    assert result.returncode == ExitCode.CONFIG
    assert "`model_providers.scripted.base_url` in -c override: must be a URL" in result.stderr


# --- trust and writable directories -----------------------------------------------------------


def test_a_c_override_cannot_trust_the_project(model_server: ModelServer, repo: Path) -> None:
    (repo / ".openinterpreter").mkdir()
    (repo / ".openinterpreter" / "config.toml").write_text('model = "planted-model"\n')
    model_server.enqueue(reply("done"))
    override = f'projects."{repo}".trust_level="trusted"'
    result = run_cli([*exec_args(model_server), "-c", override, "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    warning = f'ignoring projects."{repo}".trust_level from -c override'
    assert any(warning in text and "stays untrusted" in text for text in error_items(result))
    assert model_server.bodies[0]["model"] != "planted-model"

    shown = run_cli(["config", "show", "--origins", "-c", override], cwd=repo)
    assert f"# project: {repo} (untrusted)" in shown.stdout
    assert 'sandbox_mode = "read-only"' in shown.stdout
    assert warning in shown.stderr


def test_add_dir_under_read_only_says_the_directories_stay_read_only(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "data"
    extra.mkdir()
    model_server.enqueue(reply("done"), reply("done"))
    args = [*exec_args(model_server), "--add-dir", str(extra)]
    result = run_cli([*args, "-s", "read-only", "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    expected = f"--add-dir {extra}: not writable, the sandbox is read-only"
    assert any(expected in text for text in error_items(result))
    assert f"warning: {expected}" in result.stderr

    writable = run_cli([*args, "-s", "workspace-write", "x"], cwd=repo)
    assert writable.returncode == 0, writable.stderr
    assert "--add-dir" not in writable.stderr


# --- OPENAI_BASE_URL --------------------------------------------------------------------------


def test_openai_base_url_in_the_environment_reaches_the_built_in_provider(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("via the variable"))
    env = {"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "sk-test-key"}
    result = run_cli(["exec", "--json", "-s", "danger-full-access", "x"], cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    assert result.items("agent_message")[0]["text"] == "via the variable"
    assert model_server.model_requests[0].path == "/v1/responses"


def test_openai_base_url_in_config_beats_the_variable(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("via config"))
    env = {"OPENAI_BASE_URL": dead_url(), "OPENAI_API_KEY": "sk-test-key"}
    args = ["exec", "--json", "-s", "danger-full-access"]
    override = ["-c", f'openai_base_url="{model_server.base_url}"']
    result = run_cli([*args, *override, "x"], cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    assert result.items("agent_message")[0]["text"] == "via config"


def test_openai_base_url_is_left_alone_for_other_providers(
    model_server: ModelServer, repo: Path
) -> None:
    """Set for some other tool, the variable must not stop a run on another provider."""
    model_server.enqueue(reply("elsewhere"))
    env = {"OPENAI_BASE_URL": "not a url"}
    result = run_cli([*exec_args(model_server), "x"], cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    assert result.items("agent_message")[0]["text"] == "elsewhere"


# --- --oss ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model"), [("ollama", "gpt-oss:20b"), ("lmstudio", "openai/gpt-oss-20b")]
)
def test_oss_without_a_model_runs_the_local_default_open_model(
    model_server: ModelServer, repo: Path, provider: str, model: str
) -> None:
    model_server.enqueue(reply("local"))
    args = ["exec", "--json", "-s", "danger-full-access", "--oss", "--local-provider", provider]
    override = ["-c", f'model_providers.{provider}.base_url="{model_server.base_url}"']
    result = run_cli([*args, *override, "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert model_server.bodies[-1]["model"] == model
    # The server was asked whether it is there before the prompt went out.
    assert model_server.requests[0].path == "/v1/models"


def test_oss_without_a_server_fails_at_once_naming_the_url(repo: Path) -> None:
    url = dead_url()
    args = ["exec", "--oss", "-c", f'model_providers.ollama.base_url="{url}"', "x"]
    result = run_cli(args, cwd=repo, timeout=20)
    assert result.returncode == ExitCode.FAILED
    assert f"no Ollama server answers at {url}" in result.stderr
    assert "ollama serve" in result.stderr
    assert "Traceback" not in result.stderr


# --- config show ------------------------------------------------------------------------------


def show(repo: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    result = run_cli(["config", "show", "--json", *args], cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    return {row["key"]: row for row in json.loads(result.stdout)}


def test_config_show_gives_every_value_with_its_origin(repo: Path, oi_home: Path) -> None:
    config = oi_home / "config.toml"
    config.write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    rows = show(repo, "-m", "gpt-5.5")
    assert rows["model"] == {"key": "model", "value": "gpt-5.5", "origin": "command-line flag"}
    assert rows["sandbox_mode"]["value"] == "workspace-write"
    assert rows["sandbox_mode"]["origin"] == "default (trusted project)"
    assert rows["harness"]["value"] == "native"
    assert rows["harness"]["origin"] == "default (chosen for gpt-5.5 on openai)"
    assert rows["approval_policy"] == {
        "key": "approval_policy",
        "value": "never",
        "origin": "forced by exec",
    }
    assert rows["project_doc_max_bytes"]["origin"] == "default"
    assert rows["model_reasoning_effort"]["value"] is None
    assert rows["model_providers.openai.base_url"]["value"] == "https://api.openai.com/v1"
    assert rows["model_providers.openai.base_url"]["origin"] == "built-in provider"
    assert rows[f"projects.{repo}.trust_level"]["origin"] == f"user ({config}:2)"


def test_config_show_names_the_flag_the_environment_and_the_oss_default(repo: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://proxy:8/v1"}
    rows = show(repo, "--oss", "-s", "read-only", env=env)
    assert rows["model"]["value"] == "gpt-oss:20b"
    assert rows["model"]["origin"] == "--oss default"
    assert rows["model_provider"]["origin"] == "command-line flag"
    assert rows["sandbox_mode"]["origin"] == "command-line flag"
    # The variable is the built-in openai provider's alone.
    assert rows["openai_base_url"]["value"] is None
    rows = show(repo, env=env)
    assert rows["openai_base_url"]["origin"] == "environment (OPENAI_BASE_URL)"
    assert rows["model_providers.openai.base_url"] == {
        "key": "model_providers.openai.base_url",
        "value": "http://proxy:8/v1",
        "origin": "openai_base_url, environment (OPENAI_BASE_URL)",
    }

    text = run_cli(["config", "show", "--origins"], cwd=repo, env={"OIEXEC_MODEL": "m"})
    line = next(x for x in text.stdout.splitlines() if x.startswith("model = "))
    assert line.endswith("# environment (OIEXEC_MODEL)")


def test_config_show_gives_the_window_and_price_a_run_takes_from_the_catalog(repo: Path) -> None:
    from oiexec.catalog.data import lookup

    known = lookup("openai", None, "gpt-5")
    assert known.context_window is not None and known.price is not None
    rows = show(repo, "-m", "gpt-5")
    assert rows["model_context_window"]["value"] == known.context_window
    assert rows["model_context_window"]["origin"] == "model catalog (gpt-5 on openai)"
    price = rows["model_pricing"]["value"]
    assert isinstance(price, dict) and price["input_per_mtok"] == known.price.input_per_mtok
    # Config wins, and a model the catalog does not know shows nothing made up.
    assert show(repo, "-m", "gpt-5", "-c", "model_context_window=1000")["model_context_window"] == {
        "key": "model_context_window",
        "value": 1000,
        "origin": "-c override",
    }
    unknown = show(repo, "-m", "no-such-model-anywhere")
    assert unknown["model_context_window"]["value"] is None
    assert unknown["model_pricing"]["value"] is None
