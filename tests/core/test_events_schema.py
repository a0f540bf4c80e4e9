"""The committed JSON Schema is the published contract; it must match the models."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from oiexec.core.events import json_schema, parse_event

SCHEMA_PATH = Path(__file__).parents[2] / "oiexec" / "schemas" / "events.schema.json"

# Lines observed from `codex exec --json` (reference, codex-exec.md §3.3).
CODEX_LINES = [
    '{"type":"thread.started","thread_id":"01a235d2-7aa2-7222-8b2a-e338f2e74d9e"}',
    '{"type":"turn.started"}',
    '{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc \'echo hi\'","aggregated_output":"","exit_code":null,"status":"in_progress"}}',  # noqa: E501
    '{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc \'echo hi\'","aggregated_output":"hi\\n","exit_code":0,"status":"completed"}}',  # noqa: E501
    '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}',
    '{"type":"item.started","item":{"id":"item_0","type":"file_change","changes":[{"path":"/abs/repo/hello.txt","kind":"add"}],"status":"in_progress"}}',
    '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Thinking**"}}',
    '{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0}}',
    '{"type":"turn.failed","error":{"message":"boom"}}',
    '{"type":"error","message":"Reconnecting... 1/2 (boom)"}',
]


def test_committed_schema_matches_models() -> None:
    committed = json.loads(SCHEMA_PATH.read_text())
    assert committed == json_schema(), (
        "events.schema.json is stale: regenerate with "
        "`python -m oiexec.core.events > oiexec/schemas/events.schema.json`"
    )


@pytest.mark.parametrize("line", CODEX_LINES)
def test_codex_lines_validate_and_round_trip(line: str) -> None:
    jsonschema.validate(json.loads(line), json.loads(SCHEMA_PATH.read_text()))
    event = parse_event(line)
    assert json.loads(event.model_dump_json()) == json.loads(line)


def test_schema_rejects_unknown_event_type() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "turn.exploded"}, json.loads(SCHEMA_PATH.read_text()))
