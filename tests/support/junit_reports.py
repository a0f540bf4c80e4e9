"""Real JUnit reports for the tests of `exec --from-junit`: written by pytest (this
interpreter's) and by Jest with jest-junit (pinned in tests/support/jest, installed from the
npm registry once per checkout, as tests/sdk installs the Codex SDK), never by hand.

A pytest project and a Jest project with the same bug as the suite's `repo` fixture
(`add` subtracts); `FIX_JS` fixes the Jest one as `tests.conftest.FIX_PATCH` fixes the other.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

JEST_DIR = Path(__file__).parent / "jest"

#: Beside the `repo` fixture's unittest file: two of its three tests fail while `add`
#: subtracts, one of them a parametrized method of a class in a subdirectory.
PYTEST_FILE = "tests/unit/test_adding.py"
PYTEST_TESTS = """\
import pytest

from calc import add


def test_add_small_numbers():
    assert add(2, 3) == 5


def test_unrelated_passes():
    assert add(0, 0) == 0


class TestPairs:
    @pytest.mark.parametrize("a,b", [(1, 2), (0, 0)])
    def test_sum(self, a, b):
        assert add(a, b) == a + b
"""

BUGGY_JS = "function add(a, b) {\n  return a - b;\n}\nmodule.exports = { add };\n"
JEST_TESTS = """\
const { add } = require('../src/calc');

describe('add', () => {
  test('adds two numbers', () => {
    expect(add(2, 3)).toBe(5);
  });
  test('adds zero', () => {
    expect(add(0, 0)).toBe(0);
  });
});
"""
JEST_FILE = "test/calc.test.js"
FIX_JS = (
    "*** Begin Patch\n*** Update File: src/calc.js\n function add(a, b) {\n"
    "-  return a - b;\n+  return a + b;\n }\n*** End Patch\n"
)


#: The environment of a pytest run inside a test: none of the plugins this suite installs
#: (xdist, hypothesis, randomly...) is loaded, which saves ~2 s of start-up a run.
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def pytest_report(project: Path, report: Path, *args: str) -> Path:
    """Runs pytest in `project` (its `args`, else the whole project) with `--junitxml`."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         *args],
        cwd=project, capture_output=True, text=True, timeout=60, env={**os.environ, **PYTEST_ENV},
    )  # fmt: skip
    assert report.is_file(), proc.stdout + proc.stderr
    return report


def add_pytest_tests(project: Path) -> None:
    (project / PYTEST_FILE).parent.mkdir(parents=True, exist_ok=True)
    (project / PYTEST_FILE).write_text(PYTEST_TESTS)


def jest_installed() -> Path:
    """Jest and jest-junit, installed once (a file lock keeps parallel workers from racing)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for the --from-junit Jest test (.ci/run has them)")
    with open(JEST_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (JEST_DIR / "node_modules" / "jest-junit").is_dir():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=JEST_DIR,
                check=True,
                timeout=600,
            )
    return JEST_DIR / "node_modules"


def jest_project(project: Path, node_modules: Path) -> None:
    """A Jest project in `project` using the installed Jest (its node_modules a link)."""
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "src" / "calc.js").write_text(BUGGY_JS)
    (project / JEST_FILE).parent.mkdir(parents=True, exist_ok=True)
    (project / JEST_FILE).write_text(JEST_TESTS)
    (project / "package.json").write_text('{"name": "calc", "private": true}\n')
    (project / ".gitignore").write_text("node_modules\n")
    (project / "node_modules").symlink_to(node_modules)


def jest_report(project: Path, report: Path, *, file_attribute: bool = True) -> Path:
    """Runs Jest in `project` with jest-junit writing `report` (with the test file named on
    each case when `file_attribute`, jest-junit's `addFileAttribute`)."""
    env = {
        **os.environ,
        "JEST_JUNIT_OUTPUT_DIR": str(report.parent),
        "JEST_JUNIT_OUTPUT_NAME": report.name,
        "JEST_JUNIT_ADD_FILE_ATTRIBUTE": "true" if file_attribute else "false",
    }
    proc = subprocess.run(
        ["node", str(project / "node_modules" / "jest" / "bin" / "jest.js"), "--ci",
         "--reporters=default", "--reporters=jest-junit"],
        cwd=project, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert report.is_file(), proc.stdout + proc.stderr
    return report
