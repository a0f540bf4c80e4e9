"""Command rules through the Python API: they apply as in `interpreter exec` (a refused
command is a `declined` item of the turn), and `ignore_rules=True` is `--ignore-rules`."""

from __future__ import annotations

from pathlib import Path

from oiexec.core.events import CommandExecutionItem
from tests.api.conftest import MakeAgent
from tests.support.model_server import ModelServer, call, reply


def test_rules_apply_unless_ignored(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "rules").mkdir()
    (oi_home / "rules" / "ci.rules").write_text(
        'prefix_rule(pattern=["touch"], decision="forbidden", justification="Read only.")\n'
    )
    script = (reply(tool_calls=[call("exec_command", {"cmd": "touch marker"})]), reply("ok"))
    agent = make_agent()

    model_server.enqueue(*script)
    turn = agent.start_thread().run("go")
    assert turn.ok, turn.reason
    (item,) = turn.items[:1]
    assert isinstance(item, CommandExecutionItem) and item.status == "declined"
    assert "Read only." in item.aggregated_output
    assert not (repo / "marker").exists()

    model_server.enqueue(*script)
    assert agent.start_thread(ignore_rules=True).run("go").ok
    assert (repo / "marker").exists()
