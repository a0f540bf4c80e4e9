"""Command rules through the real CLI and the scripted model: a forbidden command is not
started (its effect never happens), JSONL shows it `declined` with the rule's justification,
the model reads the justification, on several harnesses; `--ignore-rules`; project rules
only for a trusted project; a bad rules file ends the run before the model is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply, tool_outputs

WHY = "Pushing is the pipeline's job; leave the change in the workspace."
RULES = f"""\
prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "forbidden",
    justification = "{WHY}",
    match = ["git push origin main"],
    not_match = ["git pull"],
)
"""


def _user_rules(home: Path, text: str = RULES) -> Path:
    path = home / "rules" / "default.rules"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _declined(result: Any) -> list[dict[str, Any]]:
    return [i for i in result.items("command_execution") if i["status"] == "declined"]


def test_exec_command_a_forbidden_compound_line_is_not_run(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    _user_rules(oi_home)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch marker && git push"}, call_id="a")]),
        reply(tool_calls=[call("exec_command", {"cmd": "touch allowed"}, call_id="b")]),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), "push it"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not (repo / "marker").exists()  # nothing of the line ran
    assert (repo / "allowed").exists()  # other commands still run
    (declined,) = _declined(result)
    assert declined["command"].endswith("-c 'touch marker && git push'")
    assert declined["exit_code"] is None
    assert WHY in declined["aggregated_output"]
    assert "`git push` is forbidden by a command rule" in declined["aggregated_output"]
    assert f"{oi_home / 'rules' / 'default.rules'}:1" in declined["aggregated_output"]
    # No item was started for it: the refused command never began.
    started = [e for e in result.events if e["type"] == "item.started"]
    assert all("git push" not in e["item"].get("command", "") for e in started)
    seen = tool_outputs(model_server.bodies[1])["a"]
    assert WHY in seen and "not run" in seen


def test_claude_code_bash_foreground_and_background(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    _user_rules(oi_home)
    model_server.enqueue(
        reply(
            tool_calls=[
                call("Bash", {"command": "touch m1; git push", "description": "push"}, call_id="f"),
                call(
                    "Bash",
                    {"command": "(touch m2) | git fetch", "run_in_background": True},
                    call_id="g",
                ),
            ]
        ),
        reply("done"),
    )
    args = [*exec_args(model_server), "-c", 'harness="claude-code"', "go"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not (repo / "m1").exists() and not (repo / "m2").exists()
    assert len(_declined(result)) == 2
    outputs = tool_outputs(model_server.bodies[1])
    assert WHY in outputs["f"] and "`git push`" in outputs["f"]
    assert WHY in outputs["g"] and "`git fetch`" in outputs["g"]


def test_classic_execute_shell(model_server: ModelServer, repo: Path, oi_home: Path) -> None:
    _user_rules(oi_home)
    model_server.enqueue(
        reply(
            tool_calls=[
                call("execute", {"language": "shell", "code": "touch m3\ngit push"}, call_id="e")
            ]
        ),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), "-c", 'harness="classic"', "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not (repo / "m3").exists()
    (declined,) = _declined(result)
    assert declined["command"] == "touch m3\ngit push"
    assert WHY in tool_outputs(model_server.bodies[1])["e"]


def test_ignore_rules_runs_the_command(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    _user_rules(oi_home, "this is not a rules file\n")  # not even read
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch marker; git push"})]),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), "--ignore-rules", "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (repo / "marker").exists()
    assert _declined(result) == []


def _project_rules(repo: Path) -> None:
    path = repo / ".openinterpreter" / "rules" / "project.rules"
    path.parent.mkdir(parents=True)
    path.write_text('prefix_rule(pattern=["touch"], decision="forbidden", justification="no")\n')


def _touch_run(model_server: ModelServer, repo: Path) -> Any:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch marker"})]), reply("done")
    )
    return run_cli([*exec_args(model_server), "go"], cwd=repo)


def test_project_rules_apply_only_to_a_trusted_project(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    _project_rules(repo)
    untrusted = _touch_run(model_server, repo)
    assert untrusted.returncode == 0, untrusted.stderr
    assert (repo / "marker").exists()
    assert "ignored the command rules in" in untrusted.stderr
    assert "the project is not trusted" in untrusted.stderr

    (repo / "marker").unlink()
    (oi_home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    trusted = _touch_run(model_server, repo)
    assert trusted.returncode == 0, trusted.stderr
    assert not (repo / "marker").exists()
    (declined,) = _declined(trusted)
    assert f"{repo}/.openinterpreter/rules/project.rules:1" in declined["aggregated_output"]


def test_a_bad_rules_file_ends_the_run_before_the_model_is_asked(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    path = _user_rules(oi_home, RULES + '\nprefix_rule(pattern=["rm"], match=["ls -l"])\n')
    model_server.enqueue(reply("never asked"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 3
    assert f"{path}:9: the `match` example `ls -l` does not match `rm`" in result.stderr
    assert "--ignore-rules" in result.stderr
    assert "Traceback" not in result.stderr
    assert model_server.model_requests == []
