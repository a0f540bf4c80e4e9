"""Our harnesses advertise the tools real upstream clients send: same names, parameter
names, types, enums and required lists.

The fixtures were captured from the real clients by tests/harness/upstream/capture.py (see
harnesses/UPSTREAM.md); this test only reads them. A harness may emulate a subset of the
upstream tools; every tool it does advertise must exist upstream with the same shape, unless
listed in `NOT_SENT_UPSTREAM` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.upstream.capture import normalize_tools, strip_prose

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"
HARNESSES = REPO / "harnesses"

#: harness id -> (fixture file, tools the harness must emulate at least).
COMPARISONS: dict[str, tuple[str, frozenset[str]]] = {
    "claude-code": (
        "claude-code-2.1.197.json",
        frozenset({"Bash", "Read", "Write", "Edit", "TaskCreate", "TaskUpdate"}),
    ),
    "claude-code-bare": ("claude-code-2.1.197.json", frozenset({"Bash", "Read", "Edit"})),
    "opencode": ("opencode-1.18.33.json", frozenset({"bash", "read", "edit", "write"})),
    "qwen-code": (
        "qwen-code-0.15.10.json",
        frozenset({"read_file", "write_file", "edit", "run_shell_command"}),
    ),
    "mini-swe-agent": ("mini-swe-agent-2.4.6.json", frozenset({"bash"})),
}

#: (harness, tool) pairs a harness advertises although the captured client did not send them.
NOT_SENT_UPSTREAM: dict[tuple[str, str], str] = {
    # Claude Code 2.1.197 in `-p` mode on Linux leaves Glob and Grep out of the request (its
    # Bash tool covers search there); the reference (harnesses.md §4.1) lists them for 2.1.x
    # and models trained on Claude Code know them, so the harness keeps them.
    ("claude-code", "Glob"): "not sent by 2.1.197 -p; in the 2.1.x tool set",
    ("claude-code", "Grep"): "not sent by 2.1.197 -p; in the 2.1.x tool set",
    # Codex offers update_plan only with `-c tools.update_plan.enabled=true`.
    ("native", "update_plan"): "opt-in upstream (tools.update_plan.enabled)",
}


def shape(schema: Any) -> Any:
    """What fidelity means for a JSON Schema: types, property names, enums, required lists
    and nesting. Prose, defaults, bounds and `$schema` drafts are not compared."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key in ("type", "enum", "const"):
        if key in schema:
            value = schema[key]
            out[key] = sorted(value) if key == "type" and isinstance(value, list) else value
    if "properties" in schema:
        out["properties"] = {name: shape(sub) for name, sub in schema["properties"].items()}
    if schema.get("required"):
        out["required"] = sorted(schema["required"])
    if "items" in schema:
        out["items"] = shape(schema["items"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            out[key] = [shape(sub) for sub in schema[key]]
    return out


def _fixture(name: str) -> dict[str, dict[str, Any]]:
    data = json.loads((FIXTURES / name).read_text())
    return {tool["name"]: tool for tool in data["tools"]}


def _advertised(harness: str) -> dict[str, dict[str, Any]]:
    path = HARNESSES / harness / "tools.json"
    assert path.is_file(), f"harness `{harness}` has no {path.relative_to(REPO)}"
    entries = json.loads(path.read_text())
    return {entry["name"]: entry for entry in entries}


def _mismatches(
    harness: str, ours: dict[str, dict[str, Any]], upstream: dict[str, dict[str, Any]]
) -> Iterator[str]:
    for name, tool in sorted(ours.items()):
        if name not in upstream:
            if (harness, name) not in NOT_SENT_UPSTREAM:
                yield f"{name}: advertised here but not sent by the upstream client"
            continue
        expected = upstream[name]
        if expected.get("type", "function") != tool.get("type", "function"):
            yield f"{name}: tool type {tool.get('type')!r} != upstream {expected.get('type')!r}"
            continue
        if expected.get("type") == "custom":
            if (tool.get("format") or {}).get("syntax") != expected["format"].get("syntax"):
                yield f"{name}: custom tool grammar syntax differs from upstream"
            continue
        ours_shape = shape(strip_prose(tool.get("parameters") or {}))
        theirs = shape(expected.get("parameters") or {})
        for where, mine, upstream_value in _diff(ours_shape, theirs, ""):
            yield f"{name}{where}: ours {mine!r}, upstream {upstream_value!r}"


def _diff(ours: Any, theirs: Any, where: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, ours, upstream) for every place two shapes differ."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            yield from _diff(ours.get(key), theirs.get(key), f"{where}.{key}")
    elif ours != theirs:
        yield where, ours, theirs


@pytest.mark.parametrize("harness", sorted(COMPARISONS))
def test_harness_tools_match_the_captured_upstream_client(harness: str) -> None:
    fixture, core = COMPARISONS[harness]
    upstream = _fixture(fixture)
    ours = _advertised(harness)
    problems = list(_mismatches(harness, ours, upstream))
    missing = sorted(core - set(ours))
    if missing:
        problems.append(f"core upstream tools not emulated: {', '.join(missing)}")
    assert not problems, f"{harness} vs {fixture}:\n" + "\n".join(problems)


def test_native_harness_tools_match_codex() -> None:
    """Compare what the native harness builds from its tools.json."""
    from oiexec.harness.data import load_spec
    from oiexec.harness.manifest import HarnessSetup, ManifestHarness

    harness = ManifestHarness(load_spec("native"), HarnessSetup(variables={}))
    try:
        specs = [tool.spec for tool in harness.tools()]
    finally:
        harness.close()
    body = {
        "tools": [
            {"type": "custom", "name": s.name, "format": s.format}
            if s.type == "custom"
            else {"type": "function", "name": s.name, "parameters": s.parameters}
            for s in specs
        ]
    }
    ours = {tool["name"]: tool for tool in normalize_tools(body)}
    upstream = _fixture("codex-0.171.0.json")
    problems = list(_mismatches("native", ours, upstream))
    missing = sorted({"exec_command", "write_stdin", "apply_patch"} - set(ours))
    if missing:
        problems.append(f"core upstream tools not emulated: {', '.join(missing)}")
    assert not problems, "native vs codex-0.171.0.json:\n" + "\n".join(problems)


def test_fixtures_hold_no_upstream_prose() -> None:
    for path in FIXTURES.glob("*.json"):
        data = json.loads(path.read_text())
        for tool in data["tools"]:
            assert strip_prose(tool) == tool, f"{path.name}: {tool['name']} carries prose"
            assert "definition" not in (tool.get("format") or {}), path.name


def test_shape_sees_the_differences_that_matter() -> None:
    base = {
        "type": "object",
        "properties": {"timeout": {"type": "number", "description": "ms"}},
        "required": ["timeout"],
    }
    assert shape(base) == shape({**base, "additionalProperties": False})
    assert shape(base) != shape({**base, "properties": {"timeout": {"type": "integer"}}})
    assert shape(base) != shape({**base, "required": []})
    assert shape(base) != shape({**base, "properties": {"timeout_ms": {"type": "number"}}})
