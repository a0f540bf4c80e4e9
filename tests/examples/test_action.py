"""The composite action's run step, run as GitHub runs a `shell: bash` step (`bash -eo
pipefail`), with its inputs expanded into its `env:` exactly as written there, RUNNER_TEMP and
GITHUB_OUTPUT as the runner provides them, and the install step's venv holding the shim.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.examples.conftest import API_KEY, Machine, run_action
from tests.support.model_server import call, reply, user_texts

#: A task a careless workflow would turn into code: quotes, a command substitution, a
#: leading dash an option parser would take for a flag.
NASTY_PROMPT = "-rf \"$(touch pwned)\" `touch pwned2` '; touch pwned3; ' route action/"


def test_action_runs_the_task_from_its_input_and_sets_its_outputs(machine: Machine) -> None:
    machine.server.route(
        "route action/",
        reply(tool_calls=[call("exec_command", {"cmd": "echo fixed > fixed.txt"})]),
        reply("Wrote fixed.txt.\nSecond line."),
    )
    checkout = machine.checkout("action")
    code, outputs = run_action(machine, checkout, {"prompt": NASTY_PROMPT, "api-key": API_KEY})

    assert code == 0 and outputs["exit-code"] == "0", outputs
    assert outputs["final-message"].strip() == "Wrote fixed.txt.\nSecond line."
    assert "+++ b/fixed.txt" in Path(outputs["diff"]).read_text()
    assert Path(outputs["junit"]).is_file() and Path(outputs["events"]).is_file()
    # The prompt reached the model as typed, and nothing in it ran.
    assert NASTY_PROMPT in user_texts(machine.server.bodies[0])[-1]
    assert not [p for p in machine.tmp.rglob("pwned*")]
    # The reports live outside the checkout: the change is only what the agent made.
    assert git(checkout, "status", "--porcelain") == "?? fixed.txt\n"
    assert {r.headers.get("authorization") for r in machine.server.model_requests} == {
        f"Bearer {API_KEY}"
    }


def test_action_reports_a_failed_run_in_its_outputs_and_fails_the_step(
    machine: Machine,
) -> None:
    machine.server.route(
        "route action/",
        reply(tool_calls=[call("exec_command", {"cmd": "echo step one"})]),
    )
    checkout = machine.checkout("action")
    code, outputs = run_action(
        machine, checkout, {"prompt": "route action/", "api-key": API_KEY, "max-turns": "1"}
    )
    # The turn limit (exit 4) is the step's exit code, and the outputs are set all the same.
    assert code == 4 and outputs["exit-code"] == "4", outputs
    assert outputs["diff"] == "" and outputs["final-message"] == ""

    code, outputs = run_action(
        machine,
        checkout,
        {"prompt": "route action/", "max-turns": "1", "fail-on-error": "false"},
    )
    # Without the key the provider needs, the run stops before any model request (exit 3),
    # and fail-on-error: false lets the workflow decide.
    assert code == 0 and outputs["exit-code"] == "3", outputs


def test_action_refuses_an_unsandboxed_mode(machine: Machine) -> None:
    code, outputs = run_action(
        machine, machine.checkout("action"), {"prompt": "anything", "sandbox": "danger-full-access"}
    )
    assert code == 2 and outputs == {}
    assert machine.server.model_requests == []
