"""Runs the README's first set-up command as written, the way a new user on a fresh machine would.

The command installs oiexec (not editable) into a fresh virtualenv under $HOME and runs a task in
the user's repository. Here $HOME is a temporary directory holding that repository (a git repo
with a failing test) and a user config pointing the built-in provider at the scripted model
server, so the line runs unchanged and end to end: the installed CLI (with its packaged harness
and sandbox data) edits the file in the sandbox and writes the JUnit report and the patch.

    python .ci/readme_install.py        # from the checkout, with the test dependencies installed
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.model_server import apply_patch_call, reply, running_model_server  # noqa: E402

FIX = """*** Begin Patch
*** Update File: calc.py
@@
 def add(a, b):
-    return a - b
+    return a + b
*** End Patch
"""


def step_one() -> str:
    """The first command of the README's set-up block (the line after its `# 1.` comment)."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Set-up\n.*?```sh\n(.*?)```", text, re.S)
    if block is None:
        raise SystemExit("README.md has no ```sh block under ## Set-up")
    lines = block.group(1).splitlines()
    for index, line in enumerate(lines):
        if line.startswith("# 1."):
            return lines[index + 1]
    raise SystemExit("README.md's set-up block has no `# 1.` step")


def main() -> int:
    command = step_one()
    print(f"README step 1: {command}", flush=True)
    with tempfile.TemporaryDirectory(prefix="oiexec-readme-") as tmp:
        home = Path(tmp)
        repo = home / "src" / "your-repo"
        repo.mkdir(parents=True)
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        git = ["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.com"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", "a failing add"], check=True)
        with running_model_server(
            reply(tool_calls=[apply_patch_call(FIX)]), reply("Fixed add().")
        ) as server:
            config = home / ".openinterpreter" / "config.toml"
            config.parent.mkdir()
            config.write_text(f'openai_base_url = "{server.base_url}"\n')
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("VIRTUAL_ENV", "OPENINTERPRETER", "CODEX"))
            }
            env.update(HOME=str(home), OPENAI_API_KEY="sk-readme-check")
            # Out of this (CI) virtualenv, as a fresh shell is: its bin must not lend the line
            # an `interpreter` or a `pip`.
            ours = os.path.join(sys.prefix, "bin")
            env["PATH"] = os.pathsep.join(
                p
                for p in env.get("PATH", "").split(os.pathsep)
                if os.path.realpath(p) != os.path.realpath(ours)
            )
            # From the checkout, as the README says; the line itself moves to the user's repo.
            done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, timeout=900)
        problems = []
        if done.returncode != 0:
            problems.append(f"exit code {done.returncode}")
        if "a + b" not in (repo / "calc.py").read_text():
            problems.append("the fix did not land in the user's repository")
        for name in ("oiexec-report.xml", "oiexec-change.patch"):
            if not (home / name).is_file():
                problems.append(f"{name} was not written in the home directory")
        status = subprocess.run(
            [*git, "status", "--porcelain"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if status != [" M calc.py"]:
            problems.append(f"the repository holds more than the fix: {status}")
        if problems:
            print("README step 1 failed: " + "; ".join(problems), file=sys.stderr)
            return 1
    print("README step 1 works as written in a fresh virtualenv", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
