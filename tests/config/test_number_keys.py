"""Numbers mean numbers: every numeric config key refuses `inf`, `nan`, negatives and values
past its ceiling with a config error naming the key, and the flags of the same meaning do
the same as usage errors. The keys are found by walking the settings model, so a numeric key
added later without a range fails here."""

from __future__ import annotations

import math
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import tomlkit
from pydantic import BaseModel

from oiexec.cli.options import COUNT_PARAM, NumberParam
from oiexec.config.envtext import without_none
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError
from oiexec.core.numbers import COUNT, MAX_INT, POSITIVE, PRICE, SECONDS, SIZE, NumberRange
from tests.config.conftest import Load

_Path = tuple[str | int, ...]


def _numeric_keys(model: type[BaseModel], prefix: _Path = ()) -> Iterator[tuple[_Path, type]]:
    """Every int or float key below `model`: a map's entry is named `x`, a list's item 0."""
    for name, info in model.model_fields.items():
        key = info.alias or name
        yield from _walk(info.annotation, (*prefix, key))


def _walk(annotation: Any, path: _Path) -> Iterator[tuple[_Path, type]]:
    annotation = without_none(annotation)
    origin = typing.get_origin(annotation)
    if annotation in (int, float):
        yield path, annotation
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _numeric_keys(annotation, path)
    elif origin is dict and len(typing.get_args(annotation)) == 2:
        yield from _walk(typing.get_args(annotation)[1], (*path, "x"))
    elif origin is list:
        yield from _walk(typing.get_args(annotation)[0], (*path, 0))


NUMERIC_KEYS = sorted(_numeric_keys(Settings), key=str)


def _document(path: _Path, value: Any) -> str:
    """A config file setting `path` to `value` (a list step holds one table)."""
    node: Any = value
    for part in reversed(path):
        node = [node] if isinstance(part, int) else {part: node}
    return tomlkit.dumps(node)


def _dotted(path: _Path) -> str:
    """The key as a problem names it: up to the first list (then `[0]`)."""
    names: list[str] = []
    for part in path:
        if isinstance(part, int):
            return ".".join(names) + "[0]"
        names.append(part)
    return ".".join(names)


def test_the_walk_finds_the_numeric_keys() -> None:
    found = {_dotted(path) for path, _ in NUMERIC_KEYS}
    assert {
        "check_timeout",
        "model_context_window",
        "model_providers.x.stream_idle_timeout_ms",
        "mcp_servers.x.tool_timeout_sec",
        "sandbox_limits.max_file_size_mb",
        "model_pricing.input_per_mtok",
        "hooks.PreToolUse[0]",
    } <= found


@pytest.mark.parametrize(("path", "kind"), NUMERIC_KEYS, ids=lambda v: str(v))
def test_every_numeric_key_refuses_non_numbers(
    load: Load, home: Path, path: _Path, kind: type
) -> None:
    # Past the 64-bit ceiling only for whole numbers: a price may be as large as a float.
    for bad in (math.inf, -math.inf, math.nan, -1, *([2**64] if kind is int else [])):
        (home / "config.toml").write_text(_document(path, bad))
        with pytest.raises(ConfigError) as caught:
            load()
        message = caught.value.render()
        assert f"`{_dotted(path)}`" in message, (bad, message)
        assert str(home / "config.toml") in message
        assert "expected " in message


def test_zero_keeps_its_documented_meaning(load: Load) -> None:
    """0 is "unlimited" for the sandbox limits, "no project doc" for its byte budget, and no
    retries; a window, a timeout or a limit of 0 is refused."""
    allowed = load(
        overrides=(
            "sandbox_limits.max_processes=0",
            "sandbox_limits.max_file_size_mb=0",
            "sandbox_limits.max_cpu_seconds=0",
            "project_doc_max_bytes=0",
            "model_providers.p.request_max_retries=0",
            "model_providers.p.stream_max_retries=0",
        )
    ).settings
    assert allowed.sandbox_limits.max_processes == 0
    assert allowed.project_doc_max_bytes == 0
    for refused in (
        "model_context_window=0",
        "model_auto_compact_token_limit=0",
        "tool_output_token_limit=0",
        "check_timeout=0",
        "check_max_attempts=0",
        "model_providers.p.stream_idle_timeout_ms=0",
    ):
        with pytest.raises(ConfigError, match=refused.split("=")[0].split(".")[-1]):
            load(overrides=(refused,))


def test_a_number_in_the_environment_is_held_to_the_same_range(load: Load) -> None:
    # `1e999` spells a decimal that is infinite once read.
    with pytest.raises(ConfigError) as caught:
        load(environ={"OIEXEC_CHECK_TIMEOUT": "1e999", "OIEXEC_MODEL_CONTEXT_WINDOW": "-5"})
    message = caught.value.render()
    assert "`check_timeout` in environment variable OIEXEC_CHECK_TIMEOUT" in message
    assert "got the number inf" in message
    assert "`model_context_window` in environment variable OIEXEC_MODEL_CONTEXT_WINDOW" in message
    assert "expected a whole number >= 1, got the integer -5" in message


@pytest.mark.parametrize(
    ("allowed", "good", "bad"),
    [
        (COUNT, [1, MAX_INT], [0, -1, MAX_INT + 1, 1.5, math.inf, True, "1"]),
        (SECONDS, [0.001, 1, 1e9], [0, -0.5, 1e9 + 1, math.inf, math.nan, 10**400]),
        (PRICE, [0, 0.0, 1e300], [-1e-9, math.inf, math.nan]),
        (POSITIVE, [1e-9, 5], [0, -1, math.nan]),
        (SIZE, [0, 2**43 - 1], [2**43, -1]),
    ],
)
def test_number_ranges(allowed: NumberRange, good: list[Any], bad: list[Any]) -> None:
    for value in good:
        assert allowed.problem(value) is None, value
    for value in bad:
        assert allowed.problem(value) is not None, value


@pytest.mark.parametrize(
    ("param", "word", "problem"),
    [
        (NumberParam(SECONDS, "SECONDS"), "inf", "'inf': expected a finite number of seconds"),
        (NumberParam(SECONDS, "SECONDS"), "nan", "'nan': expected a finite number"),
        (NumberParam(SECONDS, "SECONDS"), "-1", "> 0"),
        (NumberParam(SECONDS, "SECONDS"), "1e400", "'1e400'"),
        (NumberParam(POSITIVE, "USD"), "nan", "'nan': expected a finite number of USD > 0"),
        (COUNT_PARAM, "-1", "expected a whole number >= 1"),
        (COUNT_PARAM, "1.5", "'1.5' is not a whole number"),
        (COUNT_PARAM, "1e3", "'1e3' is not a whole number"),
        (COUNT_PARAM, str(2**64), f"<= {MAX_INT}"),
        (COUNT_PARAM, "\udcff", "is not a whole number"),
    ],
)
def test_flags_refuse_non_numbers(param: NumberParam, word: str, problem: str) -> None:
    with pytest.raises(click.BadParameter) as caught:
        param.convert(word, None, None)
    assert problem in caught.value.message


def test_flags_accept_numbers() -> None:
    assert NumberParam(SECONDS, "SECONDS").convert(" 2.5 ", None, None) == 2.5
    assert COUNT_PARAM.convert("7", None, None) == 7
    assert NumberParam(POSITIVE, "USD").convert(0.25, None, None) == 0.25
