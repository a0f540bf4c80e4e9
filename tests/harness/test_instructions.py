"""Every harness, on every wire it speaks, carries the user's instructions where its product
does (harness/instructions.py): `native` as a developer message after the base instructions,
every other harness at the end of its one system prompt; a replacement base prompt is sent
verbatim, after the guidance where the harness has one; a review's rubric keeps the text."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.types import Message, ModelRequest
from oiexec.harness.context import prompt_variables
from oiexec.harness.data import harness_ids, load_spec, read_harness_file
from oiexec.harness.instructions import Instructions
from oiexec.harness.manifest import HarnessSetup, ManifestHarness
from oiexec.providers import chat, messages, responses

_BUILDERS: dict[str, Callable[[ModelRequest], dict[str, Any]]] = {
    "chat": chat.build_body,
    "responses": responses.build_body,
    "messages": lambda request: messages.build_body(request),
}
#: One moment for every harness built here: prompts that show the time must not differ.
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
DEV = "Developer text: run `make check` before you finish."


def _cases() -> list[tuple[str, str]]:
    return [(h, wire) for h in harness_ids() for wire in load_spec(h).wire]


def _harness(tmp_path: Path, harness_id: str, instructions: Instructions) -> ManifestHarness:
    variables = prompt_variables(tmp_path, shell="/bin/bash", agents_md=None, now=NOW)
    setup = HarnessSetup(variables=variables, instructions=instructions)
    return ManifestHarness(load_spec(harness_id), setup)


def _body(harness: ManifestHarness, wire: str, *, instructions: str | None = None) -> Any:
    request = ModelRequest(
        model="some-model",
        instructions=instructions if instructions is not None else harness.instructions(),
        history=(Message(role="user", text="fix it"),),
        tools=tuple(t.spec for t in harness.tools()),
    )
    return _BUILDERS[wire](harness.prepare_request(request))


def _system(body: dict[str, Any]) -> list[str]:
    """The instructions the request opens with, on any wire."""
    if "system" in body:
        return [block["text"] for block in body["system"]]
    texts: list[str] = []
    for item in body.get("input") or body.get("messages") or []:
        if item.get("role") not in {"developer", "system"}:
            break
        content = item["content"]
        texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


@pytest.mark.parametrize(("harness_id", "wire"), _cases())
def test_developer_text_goes_where_the_product_puts_it(
    tmp_path: Path, harness_id: str, wire: str
) -> None:
    plain = _system(_body(_harness(tmp_path, harness_id, Instructions()), wire))
    told = _system(_body(_harness(tmp_path, harness_id, Instructions(developer=DEV)), wire))
    if harness_id == "native":
        # Codex: its own developer message right after the base instructions.
        assert load_spec(harness_id).prompt.developer_text == "message"
        assert told == [*plain, DEV]
    else:
        # Appended to the one system prompt the product sends.
        assert load_spec(harness_id).prompt.developer_text == "system"
        assert told[:-1] == plain[:-1]
        assert told[-1] == plain[-1].rstrip() + "\n\n" + DEV


@pytest.mark.parametrize(("harness_id", "wire"), _cases())
def test_base_file_replaces_the_prompt_verbatim(tmp_path: Path, harness_id: str, wire: str) -> None:
    base = "My own prompt. $cwd and ${os} stay as written."
    harness = _harness(tmp_path, harness_id, Instructions(base=base, developer=DEV))
    system = _system(_body(harness, wire))
    spec = load_spec(harness_id)
    expected = base
    if spec.guidance:
        expected = read_harness_file(harness_id, spec.guidance).strip() + "\n\n" + base
    joined = "\n\n".join(system)
    assert joined.startswith(expected)
    assert joined.count(DEV) == 1


@pytest.mark.parametrize("harness_id", ["native", "claude-code", "mini-swe-agent"])
def test_review_rubric_keeps_the_developer_text(tmp_path: Path, harness_id: str) -> None:
    harness = _harness(tmp_path, harness_id, Instructions(developer=DEV))
    system = _system(_body(harness, "chat", instructions="The review rubric."))
    if harness_id == "native":
        assert system == ["The review rubric.", DEV]
    else:
        assert system == [f"The review rubric.\n\n{DEV}"]


def test_no_instructions_change_nothing(tmp_path: Path) -> None:
    for harness_id, wire in _cases():
        one = _body(_harness(tmp_path, harness_id, Instructions()), wire)
        assert DEV not in str(one)
        assert _system(one) == [_harness(tmp_path, harness_id, Instructions()).instructions()]
