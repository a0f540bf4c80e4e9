"""Speed and memory of `interpreter`: `--version`, `exec --help`, the modules one exec run
imports, and a 6-turn scripted fix, side by side with `codex exec` when it is installed.

    python bench/run.py [--runs N] [--codex PATH]

The fix runs against the scripted model server on 127.0.0.1 with zero latency, so what is
measured is the runner itself: wall and CPU time, peak RSS, and the time it adds on top of
the commands the model asked for (measured by running the same commands directly). If a
`codex` binary is found (PATH, or the Codex SDK test's node_modules: the suite installs the
SDK without Codex's binaries, `npm install --prefix tests/sdk` adds them), the same figures
are printed for `codex exec`, in the same run.

Targets (2-core machine): `--version` and `exec --help` <= 40 ms; one exec run imports <= 480
modules; the 6-turn fix: peak RSS <= 50 MiB, and beside codex wall <= 0.85x and runner CPU
<= 0.20x codex's (runner CPU: the process tree's user + sys time less the commands' own, as
measured running them directly). A figure over its target prints OVER TARGET.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.model_server import (  # noqa: E402
    ModelServer,
    apply_patch_call,
    call,
    reply,
    running_model_server,
)

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = (
    "import unittest\nfrom calc import add\n\n"
    "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
PATCH = (
    "*** Begin Patch\n*** Update File: calc.py\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n*** End Patch\n"
)
# `-B`: the patch keeps the file size and lands within the same second as the first test
# run, so a cached .pyc would hide it.
COMMANDS = [
    "ls",
    "cat calc.py test_calc.py",
    "python3 -B -m unittest -q",
    "python3 -B -m unittest -q",
]


@dataclass
class Measure:
    wall: float
    cpu: float
    rss_mib: float
    code: int


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of a measured run: this one's, except PYTHONDONTWRITEBYTECODE (a test
    shell often sets it): an installed package has its bytecode, and without it every module
    edited since the last write is compiled again on every run, which is not what a user
    pays (`main` below writes it once, with a warm-up run)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")
    }
    # The runner gives its commands the PATH it was started with less its own virtualenv
    # (tools/shell_env.py), so a `python3` there is not the runner's. The floor and codex get
    # the same PATH: otherwise the commands differ (a bench started from an activated venv
    # runs its `python3` directly for them, where ours resolve it through, say, pyenv's
    # shims, a dozen shell processes per call) and that difference is counted as the runner's.
    path = os.environ.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(d for d in path if not (Path(d).parent / "pyvenv.cfg").exists())
    env.update(extra)
    return env


def run_measured(argv: list[str], *, cwd: Path, env: dict[str, str]) -> Measure:
    """Runs argv as a child: wall time, user+sys CPU and peak RSS of the child tree.

    Peak RSS comes from GNU time when it is installed: a child forked from this (large)
    process starts with this process's RSS, which would otherwise count as the child's.
    """
    gnu_time = Path("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        wrapped = [str(gnu_time), "-f", "%M", "-o", report.name, *argv]
        started = time.perf_counter()
        proc = subprocess.Popen(
            wrapped if gnu_time.exists() else argv,
            cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        rss_kib = usage.ru_maxrss
        if gnu_time.exists():
            lines = report.read().split()
            rss_kib = int(lines[-1]) if lines else rss_kib
    code = os.waitstatus_to_exitcode(status)
    return Measure(wall, usage.ru_utime + usage.ru_stime, rss_kib / 1024, code)


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(BUGGY)
    (repo / "test_calc.py").write_text(TEST)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def script(server: ModelServer) -> None:
    """Six model turns: look, read, test (fails), patch, test (passes), answer."""
    server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": COMMANDS[0]})]),
        reply(tool_calls=[call("exec_command", {"cmd": COMMANDS[1]})]),
        reply(tool_calls=[call("exec_command", {"cmd": COMMANDS[2]})]),
        reply(tool_calls=[apply_patch_call(PATCH)]),
        reply(tool_calls=[call("exec_command", {"cmd": COMMANDS[3]})]),
        reply("Fixed add(); tests pass."),
    )


def commands_time(repo: Path) -> tuple[float, float]:
    """What the model's commands cost when run directly (the floor for any runner): wall
    time and CPU time (user + sys of the commands)."""
    import resource

    env = bench_env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    for cmd in COMMANDS:
        subprocess.run(["/bin/bash", "-c", cmd], cwd=repo, env=env, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interpreter_bin() -> list[str]:
    script_path = Path(sys.prefix) / "bin" / "interpreter"
    return [str(script_path)] if script_path.exists() else [sys.executable, "-m", "oiexec"]


def find_codex(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    found = shutil.which("codex")
    if found:
        return found
    vendored = list(
        (ROOT / "tests" / "sdk" / "node_modules").glob("@openai/codex-linux-*/vendor/*/bin/codex")
    )
    return str(vendored[0]) if vendored else None


def bench_fix(argv_for: list[str], runs: int, sandbox: str, codex: bool = False) -> list[Measure]:
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp, running_model_server() as server:
            base = Path(tmp)
            repo = make_repo(base)
            script(server)
            env = bench_env()
            if codex:
                home = base / "codex-home"
                home.mkdir()
                (home / "config.toml").write_text(
                    'model_provider = "bench"\nmodel = "gpt-5.5"\n'
                    "[model_providers.bench]\n"
                    f'name = "bench"\nbase_url = "{server.base_url}"\nwire_api = "responses"\n'
                )
                env["CODEX_HOME"] = str(home)
                argv = [
                    *argv_for,
                    "exec",
                    "--json",
                    "-s",
                    sandbox,
                    "--skip-git-repo-check",
                    "fix it",
                ]
            else:
                env["OPENINTERPRETER_HOME"] = str(base / "oi-home")
                argv = [*argv_for, "exec", "--json", "-s", sandbox, *server.config_args(), "fix it"]
            measure = run_measured(argv, cwd=repo, env=env)
            fixed = "a + b" in (repo / "calc.py").read_text()
            if not fixed or measure.code != 0:
                print(f"  warning: run exited {measure.code}, fixed={fixed}", file=sys.stderr)
            results.append(measure)
    return results


def report(name: str, measures: list[Measure], floor: float) -> None:
    wall = statistics.median(m.wall for m in measures)
    cpu = statistics.median(m.cpu for m in measures)
    rss = max(m.rss_mib for m in measures)
    print(
        f"{name:<38} wall {wall * 1000:7.0f} ms   cpu {cpu * 1000:6.0f} ms   "
        f"peak RSS {rss:5.1f} MiB   added over commands {max(0.0, wall - floor) * 1000:6.0f} ms"
    )


def bench_version(argv: list[str], runs: int, *args: str) -> list[Measure]:
    env = bench_env()
    flags = list(args) or ["--version"]
    return [run_measured([*argv, *flags], cwd=ROOT, env=env) for _ in range(runs)]


def python_of(argv_for: list[str]) -> str:
    """The Python the measured `interpreter` runs on (its venv's), else this one."""
    python = Path(argv_for[0]).with_name("python") if argv_for[0].endswith("interpreter") else None
    return str(python) if python is not None and python.exists() else sys.executable


def stack_floor(argv_for: list[str], runs: int) -> list[Measure]:
    """The measured interpreter's Python importing click, pydantic (a model built) and httpx
    (a client made), nothing of oiexec."""
    exe = python_of(argv_for)
    code = (
        "import click, httpx, pydantic\n"
        "class M(pydantic.BaseModel):\n    x: int\n"
        "M(x=1).model_dump_json(); httpx.Client().close()\n"
    )
    env = bench_env()
    return [run_measured([exe, "-c", code], cwd=ROOT, env=env) for _ in range(max(5, runs))]


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def modules_imported(argv_for: list[str]) -> tuple[int, int]:
    """Modules the runner process imports in one exec run of the fix (Python's own
    `-X importtime` report, through PYTHONPROFILEIMPORTTIME so the console script counts):
    (modules loaded, names looked up). The report also lists lookups of modules that are
    not there (Windows' `nt` and `winreg`, httpx's optional `brotli` and `zstandard`,
    httpcore's `trio` and `h2`...), which load nothing; the measured interpreter itself
    says which names it cannot find."""
    with tempfile.TemporaryDirectory() as tmp, running_model_server() as server:
        base = Path(tmp)
        repo = make_repo(base)
        script(server)
        env = bench_env(OPENINTERPRETER_HOME=str(base / "oi-home"))
        env["PYTHONPROFILEIMPORTTIME"] = "1"
        argv = [*argv_for, "exec", "--json", *server.config_args(), "fix it"]
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "imported package" not in line
    }
    exe = python_of(argv_for)
    find = (
        "import importlib.util, json, sys\n"
        "def absent(name):\n"
        "    try:\n        return importlib.util.find_spec(name) is None\n"
        "    except (ImportError, ValueError):\n        return True\n"
        "print(sum(map(absent, json.load(sys.stdin))))\n"
    )
    missing = subprocess.run(
        [exe, "-c", find], input=json.dumps(sorted(names)), capture_output=True, text=True
    )
    absent = int(missing.stdout.strip() or 0)
    return len(names) - absent, len(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--codex", help="path to a codex binary to compare with")
    parser.add_argument(
        "--interpreter",
        help="path to the `interpreter` to measure (e.g. one installed in a clean venv)",
    )
    parser.add_argument(
        "--sandbox", default="danger-full-access", choices=["danger-full-access", "workspace-write"]
    )
    args = parser.parse_args()

    oi = [args.interpreter] if args.interpreter else interpreter_bin()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, runs={args.runs}")
    print(f"measuring: {' '.join(oi)}")
    bench_fix(oi, 1, args.sandbox)  # warm-up: bytecode written, page cache filled
    version = bench_version(oi, max(10, args.runs * 4))
    for label, measures in (
        ("interpreter --version", version),
        ("interpreter exec --help", bench_version(oi, max(10, args.runs * 4), "exec", "--help")),
    ):
        ms = statistics.median(m.wall for m in measures) * 1000
        print(
            f"{label:<38} wall {ms:7.0f} ms   peak RSS {max(m.rss_mib for m in measures):5.1f} "
            f"MiB   (target <= 40 ms) {verdict(ms, 40)}"
        )
    count, looked_up = modules_imported(oi)
    label = "modules one exec run imports"
    print(
        f"{label:<38} {count:7d}      (target <= 480) {verdict(count, 480)}   "
        f"({looked_up} names looked up, {looked_up - count} of them not installed)"
    )
    floors = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            floors.append(commands_time(make_repo(Path(tmp))))
    floor = statistics.median(f[0] for f in floors)
    floor_cpu = statistics.median(f[1] for f in floors)
    print(
        f"{'commands run directly (floor)':<38} wall {floor * 1000:7.0f} ms   "
        f"cpu {floor_cpu * 1000:6.0f} ms"
    )
    ours = bench_fix(oi, args.runs, args.sandbox)
    report(f"interpreter exec, 6 turns ({args.sandbox})", ours, floor)
    rss = max(m.rss_mib for m in ours)
    print(f"  peak RSS {rss:.1f} MiB (target <= 50) {verdict(rss, 50)}")

    codex = find_codex(args.codex)
    if codex:
        version_out = subprocess.run(
            [codex, "--version"], capture_output=True, text=True
        ).stdout.strip()
        cv = bench_version([codex], max(10, args.runs * 4))
        print(
            f"{version_out + ' --version':<38} wall "
            f"{statistics.median(m.wall for m in cv) * 1000:7.0f} ms   "
            f"peak RSS {max(m.rss_mib for m in cv):5.1f} MiB"
        )
        theirs = bench_fix([codex], args.runs, args.sandbox, codex=True)
        report(f"codex exec, 6 turns ({args.sandbox})", theirs, floor)
        # Runner CPU: the tree's CPU less what the commands cost when run directly (the
        # same for any runner), so the runner's own work is compared.
        for what, key, target in (
            ("wall", lambda m: m.wall, 0.85),
            ("runner CPU", lambda m: max(0.0, m.cpu - floor_cpu), 0.20),
        ):
            ratio = statistics.median(map(key, ours)) / statistics.median(map(key, theirs))
            shown = f"{ratio:.2f}x codex's (target <= {target:.2f}x)"
            print(f"  {what}: {shown} {verdict(ratio, target)}")
        # What any runner built on this stack pays before it does anything: the interpreter
        # starting and importing the three libraries every run needs. Beside codex's runner
        # CPU it shows how much of the ratio is left to the runner's own code.
        stack = statistics.median(m.cpu for m in stack_floor(oi, args.runs))
        theirs_cpu = statistics.median(max(0.0, m.cpu - floor_cpu) for m in theirs)
        print(
            f"  stack floor (Python + click, pydantic, httpx imported): cpu {stack * 1000:.0f} ms"
            f" = {stack / theirs_cpu:.2f}x codex's runner CPU"
        )
    else:
        print(
            "codex: not installed (npm install --prefix tests/sdk, or pass --codex PATH) — skipped"
        )


if __name__ == "__main__":
    main()
