"""fix-tests.yml on a push whose tests fail, its steps run as GitHub runs them: the test step
fails; the fix step (the composite action, with the `with:` values the workflow writes) lets
the model fix the code, and the run succeeds only once the same test command passes in the
sandbox (`--check`); the pull-request job's apply step puts the uploaded patch on a fresh
checkout, where the tests then pass. Left out: setup-python, the project install, and the
upload/download of the artifact (the patch file is handed over as it is)."""

from __future__ import annotations

import shutil
import subprocess

from tests.conftest import FIX_PATCH, git
from tests.examples import sources
from tests.examples.conftest import API_KEY, GITHUB_BASH, Machine, run_action, run_script
from tests.support.model_server import apply_patch_call, reply, user_texts


def test_failing_tests_are_fixed_until_the_test_command_passes_and_the_patch_applies(
    machine: Machine,
) -> None:
    doc = sources.load_yaml(sources.CI / "fix-tests.yml")
    job = doc["jobs"]["test-and-fix"]
    # A push: no workflow_dispatch inputs, so the expression's default applies.
    (expression,) = [v for v in job["env"].values()]
    test_command = expression.split("||")[1].strip(" '}")
    context = {
        expression.strip("${} "): test_command,
        "secrets.OPENAI_API_KEY": API_KEY,
        "env.TEST_COMMAND": test_command,
    }
    env = {"TEST_COMMAND": sources.expand(expression, context)}
    assert env["TEST_COMMAND"] == "python -m pytest -q"

    checkout = machine.checkout("test-and-fix")
    # The runner's temp directory, where the test step leaves its JUnit report for the fix.
    runner_temp = machine.tmp / "runner-temp"
    runner_temp.mkdir()
    context["runner.temp"] = str(runner_temp)
    tests = sources.github_step(job, runs="$TEST_COMMAND")
    failed = run_script(
        [*GITHUB_BASH, tests["run"]],
        cwd=checkout,
        env=machine.env({**env, "RUNNER_TEMP": str(runner_temp)}),
    )
    assert failed.returncode != 0 and "1 failed" in failed.stdout
    assert (runner_temp / "test-report.xml").is_file()

    # The model first claims success without changing anything; the check (the test
    # command) fails and its output goes back to the model, which then fixes the code.
    machine.server.enqueue(
        reply("The tests look fine to me."),
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add() in calc.py."),
    )
    fix = sources.github_step(job, uses="./examples/ci/action")
    given = {name: sources.expand(str(value), context) for name, value in fix["with"].items()}
    assert given["check"] == test_command and given["sandbox"] == "workspace-write"
    assert given["extra-args"].splitlines() == [
        "--from-junit",
        str(runner_temp / "test-report.xml"),
    ]
    code, outputs = run_action(machine, checkout, given)
    assert code == 0 and outputs["exit-code"] == "0", outputs
    assert outputs["final-message"].strip() == "Fixed add() in calc.py."
    # The check's failure came back to the model as a message; the prompt named the command
    # and, from the report, the failing test with its assertion.
    assert "1 failed" in user_texts(machine.server.bodies[1])[-1]
    prompt = user_texts(machine.server.bodies[0])[-1]
    assert test_command in prompt
    assert "## Failing tests" in prompt and "AssertionError: -1 != 5" in prompt

    # The pull-request job: a fresh checkout, the artifact's patch, the step as written.
    pr_job = doc["jobs"]["pull-request"]
    apply = sources.github_step(pr_job, runs="git apply")
    runner_temp = machine.tmp / "pr-runner-temp"
    (runner_temp / "oiexec-fix").mkdir(parents=True)
    shutil.copy(outputs["diff"], runner_temp / "oiexec-fix")
    fresh = machine.checkout("pull-request")
    proc = run_script(
        [*GITHUB_BASH, apply["run"]],
        cwd=fresh,
        env=machine.env({"RUNNER_TEMP": str(runner_temp)}),
    )
    assert proc.returncode == 0, proc.stderr
    assert git(fresh, "diff", "--cached", "--name-only") == "calc.py\n"
    passed = subprocess.run(
        ["bash", "-c", test_command], cwd=fresh, capture_output=True, text=True, env=machine.env()
    )
    assert passed.returncode == 0, passed.stdout
