"""`model_fallbacks` in-process: how entries resolve (runner/fallbacks.py) and when the client
moves on (providers/fallback.py). The CLI's behaviour is in tests/cli/test_model_fallbacks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.config.loader import ConfigInputs, LoadedConfig, load_config
from oiexec.core.errors import ConfigError, ProviderError, ProviderUnavailable
from oiexec.core.types import Message, ModelRequest, ModelResponse
from oiexec.providers.fallback import FallbackClient, FallbackModel
from oiexec.runner.fallbacks import resolve_fallbacks


def _config(tmp_path: Path, *overrides: str, environ: dict[str, str] | None = None) -> LoadedConfig:
    inputs = ConfigInputs(cwd=tmp_path, overrides=('model_provider="ollama"', *overrides))
    return load_config(inputs, home=tmp_path / "home", environ=environ or {}, warnings=[])


def test_a_provider_prefix_picks_that_provider_and_anything_else_is_the_runs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    config = _config(
        tmp_path,
        'model_fallbacks=["openrouter/qwen/qwen3-coder", "qwen/qwen3-coder", "llama3"]',
    )
    fallbacks = resolve_fallbacks(config, "ollama", "native")
    assert [(f.provider_id, f.model) for f in fallbacks] == [
        ("openrouter", "qwen/qwen3-coder"),
        ("ollama", "qwen/qwen3-coder"),
        ("ollama", "llama3"),
    ]
    assert fallbacks[0].api_key == "sk-or-test"
    # The fallback's key is kept from the commands the model runs, as the run's own is.
    assert "OPENROUTER_API_KEY" in config.settings.shell_environment_policy.exclude


def test_the_runs_own_model_and_repeats_are_left_out(tmp_path: Path) -> None:
    config = _config(
        tmp_path, 'model="llama3"', 'model_fallbacks=["ollama/llama3", "qwen", "qwen"]'
    )
    assert [f.label for f in resolve_fallbacks(config, "ollama", "native")] == ["ollama/qwen"]


def test_a_missing_key_is_a_config_error_naming_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = _config(tmp_path, 'model_fallbacks=["anthropic/claude-sonnet-4"]')
    with pytest.raises(
        ConfigError, match=r"model_fallbacks entry `anthropic/claude-sonnet-4`.*ANTHROPIC_API_KEY"
    ):
        resolve_fallbacks(config, "ollama", "native")


def test_a_harness_that_cannot_talk_the_fallbacks_wire_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    config = _config(tmp_path, 'model_fallbacks=["anthropic/claude-sonnet-4"]')
    with pytest.raises(ConfigError, match=r"cannot run on .*messages"):
        resolve_fallbacks(config, "ollama", "native")


def test_a_blank_entry_is_refused_by_the_config_loader(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model_fallbacks"):
        _config(tmp_path, 'model_fallbacks=[" "]')


class _Client:
    def __init__(self, *outcomes: Exception | str) -> None:
        self.outcomes = list(outcomes)
        self.models: list[str] = []
        self.closed = False

    def respond(self, request: ModelRequest, on_retry: object) -> ModelResponse:
        self.models.append(request.model)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return ModelResponse(items=(Message(role="assistant", text=outcome),))

    def close(self) -> None:
        self.closed = True


_REQUEST = ModelRequest(model="main", instructions="", history=())


def test_the_client_moves_on_once_and_stays_on_the_new_model() -> None:
    first = _Client(ProviderUnavailable("503 overloaded"))
    second = _Client("one", "two")
    moves: list[tuple[str, str, str]] = []
    client = FallbackClient(
        first,
        "p/main",
        [FallbackModel("q/backup", "backup", lambda: second)],
        lambda before, target, why: moves.append((before, target.label, why)),
    )
    assert client.respond(_REQUEST, lambda *_: None).final_text == "one"
    assert client.respond(_REQUEST, lambda *_: None).final_text == "two"
    assert moves == [("p/main", "q/backup", "503 overloaded")]
    assert (first.models, second.models) == (["main"], ["backup", "backup"])
    client.close()
    assert first.closed and second.closed


def test_errors_no_other_model_would_fix_are_raised_as_they_are() -> None:
    opened: list[str] = []
    client = FallbackClient(
        _Client(ProviderError("401 bad key")),
        "p/main",
        [FallbackModel("q/backup", "backup", lambda: opened.append("x") or _Client("no"))],
        lambda *_: None,
    )
    with pytest.raises(ProviderError, match="bad key"):
        client.respond(_REQUEST, lambda *_: None)
    assert opened == []


def test_the_last_models_failure_is_the_runs() -> None:
    client = FallbackClient(
        _Client(ProviderUnavailable("first down")),
        "p/main",
        [FallbackModel("q/backup", "backup", lambda: _Client(ProviderUnavailable("all down")))],
        lambda *_: None,
    )
    with pytest.raises(ProviderUnavailable, match="all down"):
        client.respond(_REQUEST, lambda *_: None)
