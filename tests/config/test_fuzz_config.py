"""Property: whatever the config holds (known keys with values of any type, size and sign,
inf and nan, random nesting and strings, keys Codex knows and typos, raw bytes that are not
TOML or not UTF-8, `-c` overrides and `OIEXEC_` variables of any text), loading it returns a
config or raises the documented config or usage error, whose message can be printed; never
another exception, and in bounded time. In-process (the loader is the code under test);
tests/cli/test_input_bounds.py takes the worst cases through the real CLI."""

from __future__ import annotations

import math
import tempfile
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomlkit
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from oiexec.config.codex_schema import KEYS_FILE, parse_path
from oiexec.config.effects import RunFacts, no_effect_notes
from oiexec.config.envtext import without_none
from oiexec.config.loader import ConfigInputs, LoadedConfig, load_config
from oiexec.config.providers import resolve_provider
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError, UsageError

#: Seconds one load may take (milliseconds in practice; generous for a loaded machine).
_BOUND_S = 5.0


def _paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of the settings tree (a map's entry is `x`; a list is a leaf)."""
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        yield path
        annotation = without_none(info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _paths(annotation, path)
        elif typing.get_origin(annotation) is dict:
            value = without_none(typing.get_args(annotation)[1])
            if isinstance(value, type) and issubclass(value, BaseModel):
                yield from _paths(value, (*path, "x"))


def _codex_paths() -> list[tuple[str, ...]]:
    lines = KEYS_FILE.read_text("utf-8").splitlines()
    return [
        tuple("x" if part in ("*", "**") else part for part in parse_path(line))
        for line in lines[1::7]  # a spread of Codex's keys, not all 800
        if line and not line.startswith("#")
    ]


_KNOWN = sorted(set(_paths(Settings)))
_KEY_PATHS = st.one_of(
    st.sampled_from(_KNOWN),
    st.sampled_from(_codex_paths()),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4).map(tuple),
)
# File text is UTF-8, so no lone surrogates there; the environment may hold them.
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**63, 2**64, math.inf, -math.inf, math.nan, 1e300]),
)
_SCALARS = st.one_of(
    st.booleans(),
    _NUMBERS,
    _TEXT,
    st.sampled_from(["", " ", "never", "workspace-write", "http://127.0.0.1:9/v1", "é", "a\nb"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


def _document(entries: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """The entries as one nested table; a later entry under an earlier scalar is dropped."""
    doc: dict[str, Any] = {}
    for path, value in entries:
        node = doc
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[path[-1]] = value
    return doc


def _literal(value: Any) -> str:
    return tomlkit.item(value).as_string() if not isinstance(value, dict) else "{}"


_OVERRIDES = st.lists(
    st.one_of(
        st.tuples(_KEY_PATHS, _VALUES).map(
            lambda kv: ".".join(f'"{p}"' for p in kv[0]) + "=" + _literal(kv[1])
        ),
        _TEXT,
        st.sampled_from(["profile=x", "profile=1", "a..b=1", '"unterminated=1', "=1"]),
    ),
    max_size=3,
)
_ENVIRON = st.dictionaries(
    st.sampled_from(
        ["OIEXEC_MODEL", "OIEXEC_CHECK_TIMEOUT", "OIEXEC_MODEL_CONTEXT_WINDOW", "OIEXEC_TOOLS"]
    )
    | st.text(max_size=10).map(lambda name: "OIEXEC_" + name.upper()),
    st.text(max_size=20) | st.sampled_from(["inf", "nan", "-1", "1e999", "{}", "[[[[", "\udcff"]),
    max_size=3,
)


def _load(text: bytes, overrides: tuple[str, ...], environ: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        (project / ".git").mkdir(parents=True)
        (home / "config.toml").write_bytes(text)
        start = time.monotonic()
        try:
            loaded = load_config(
                ConfigInputs(cwd=project, overrides=overrides), home=home, environ=environ
            )
            _use(loaded)
        except (ConfigError, UsageError) as exc:
            exc.render().encode("utf-8")  # the message can be printed as it is
        assert time.monotonic() - start < _BOUND_S


def _use(loaded: LoadedConfig) -> None:
    """What a run does next with a config: its notes, its origins, its provider."""
    no_effect_notes(loaded.settings, loaded.layers, loaded.ignored, RunFacts(), strict=False)
    for key in list(loaded.origins)[:50]:
        assert loaded.origins[key]
    resolve_provider(loaded.settings)


_COMMON = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_COMMON
@given(entries=st.lists(st.tuples(_KEY_PATHS, _VALUES), max_size=8), overrides=_OVERRIDES)
@example(entries=[(("check_timeout",), math.inf)], overrides=[])
@example(entries=[(("model_context_window",), 0)], overrides=["check_timeout=nan"])
@example(entries=[(("tools", "x"), [[[[[[]]]]]])], overrides=["tools.x=" + "[" * 5000])
@example(
    entries=[(("model_providers", "x", "http_headers"), {"X-A": "Zürich"})],
    overrides=["profile=1"],
)
@example(entries=[(("desktop", "k"), 1)], overrides=["tools." + "a." * 5000 + "b=1"])
@example(entries=[(("profile",), "\x00")], overrides=[])
@example(entries=[(("sandbox_workspace_write", "writable_roots"), ["a\x00b"])], overrides=[])
def test_any_config_document_loads_or_is_a_config_error(
    entries: list[tuple[tuple[str, ...], Any]], overrides: list[str]
) -> None:
    text = tomlkit.dumps(_document(entries))
    _load(text.encode("utf-8"), tuple(overrides), {})


@_COMMON
@given(text=st.binary(max_size=200) | _TEXT.map(str.encode), environ=_ENVIRON)
@example(text=b"x = " + b"[" * 10_000, environ={})
@example(text=b"a" + b".a" * 10_000 + b" = 1", environ={})
@example(text=b"x = " + b"{a=" * 10_000, environ={})
@example(text=b"model = '\xff'", environ={})
@example(text=b"", environ={"OIEXEC_TOOLS": '{"a":' * 10_000})
@example(text=b"", environ={"OIEXEC_MODEL": "\udcff", "OIEXEC_X\udcff": "1"})
@example(text=b"", environ={"OIEXEC_CHECK_TIMEOUT": "1e999"})
def test_any_config_bytes_and_environment_load_or_are_a_config_error(
    text: bytes, environ: dict[str, str]
) -> None:
    _load(text, (), environ)
