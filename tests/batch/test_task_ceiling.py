"""The batch command line is the ceiling of every task's sandbox: a task file may tighten it,
never loosen it. A looser task (its `sandbox`, or a `profile` whose settings loosen) is a
validation error naming the task, its line and the key, before anything runs (the model is
never asked). That a tighter task runs tightened: tests/sandbox/test_batch_ceiling.py."""

from __future__ import annotations

from pathlib import Path

from oiexec.core.policy import SandboxPolicy, loosenings
from oiexec.runner.batch.ceiling import Ceiling
from oiexec.runner.batch.tasks import Task
from oiexec.runner.request import new_request
from tests.batch.conftest import write_tasks
from tests.conftest import run_cli
from tests.support.model_server import ModelServer

_PROFILES = """
[profiles.open]
sandbox_mode = "danger-full-access"

[profiles.net]
sandbox_workspace_write.network_access = true

[profiles.roots]
sandbox_workspace_write.writable_roots = ["/var/tmp"]

[profiles.leaky]
shell_environment_policy.ignore_default_excludes = true

[profiles.unlimited]
sandbox_limits.max_processes = 0

[profiles.tight]
sandbox_mode = "read-only"
"""


def _batch(server: ModelServer, tasks: Path, out: Path, *flags: str) -> list[str]:
    return ["batch", str(tasks), "--out", str(out), *flags, *server.config_args(), "-j", "1"]


def test_looser_tasks_are_refused_by_line_id_and_key_before_anything_runs(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text(_PROFILES)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "full", "prompt": "x", "repo": str(repo), "sandbox": "danger-full-access"},
            {"id": "write", "prompt": "x", "repo": str(repo), "sandbox": "workspace-write"},
            {"id": "fine", "prompt": "x", "repo": str(repo), "sandbox": "read-only"},
            {"id": "prof", "prompt": "x", "repo": str(repo), "profile": "open"},
        ],
    )
    out = tmp_path / "out"
    # No -s: the ceiling is what config gives a task's (never trusted) worktree, read-only.
    for flags in (["-s", "read-only"], []):
        result = run_cli(_batch(model_server, tasks, out, *flags), cwd=repo)
        assert result.returncode == 2, result.stderr
        err = result.stderr
        assert "tasks.jsonl:1: task 'full': `sandbox` 'danger-full-access' loosens" in err
        assert "tasks.jsonl:2: task 'write': `sandbox` 'workspace-write' loosens" in err
        assert "'fine'" not in err
        assert "Nothing was run" in err
        if flags:  # -s beats what a profile sets: `open` stays read-only
            assert "'prof'" not in err
        else:
            assert "tasks.jsonl:4: task 'prof': `profile` 'open' loosens" in err
    # Nothing ran: the model was never asked, no task directory was made.
    assert model_server.requests == []
    assert not out.exists()


def test_a_profile_cannot_add_network_roots_secrets_or_limits(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text(_PROFILES)
    names = ("net", "roots", "leaky", "unlimited", "tight")
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": name, "prompt": "x", "repo": str(repo), "profile": name} for name in names],
    )
    out = tmp_path / "out"
    flags = ["-s", "workspace-write"]
    env = {"SOME_API_TOKEN": "tok-123456789"}
    result = run_cli(_batch(model_server, tasks, out, *flags), cwd=repo, env=env)
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert "task 'net': `profile` 'net' loosens" in err and "network access is on" in err
    assert "task 'roots'" in err and "/var/tmp is writable" in err
    assert "task 'leaky'" in err and "secret value(s) kept in the commands' environment" in err
    assert "task 'unlimited'" in err and "max_processes is unlimited" in err
    assert "'tight'" not in err
    assert model_server.requests == []


def test_an_unknown_profile_in_a_task_is_named_before_anything_runs(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "t.jsonl", [{"id": "p", "prompt": "x", "repo": str(repo), "profile": "nope"}]
    )
    result = run_cli(_batch(model_server, tasks, tmp_path / "o"), cwd=repo)
    assert result.returncode == 2
    assert "t.jsonl:1: task 'p': `profile` 'nope': profile `nope` not found" in result.stderr
    assert model_server.requests == []


def test_loosenings_compares_every_part_of_a_policy(tmp_path: Path) -> None:
    ceiling = SandboxPolicy(
        mode="workspace-write",
        cwd=tmp_path,
        read_only_paths=(tmp_path / "docs",),
        deny_paths=(tmp_path / ".env",),
        require="full",
    )
    assert loosenings(ceiling, ceiling) == []
    tighter = SandboxPolicy(
        mode="read-only", cwd=tmp_path, deny_paths=(tmp_path / ".env",), require="full"
    )
    assert loosenings(ceiling, tighter) == []
    looser = SandboxPolicy(mode="workspace-write", cwd=tmp_path, require="any", backend="landlock")
    found = " | ".join(loosenings(ceiling, looser))
    assert f"{tmp_path / 'docs'} is writable" in found
    assert f"{tmp_path / '.env'} is not denied" in found
    assert "degraded sandbox" in found and "Landlock" in found


def test_the_ceiling_resolves_a_task_as_its_run_would(tmp_path: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text(_PROFILES)
    request = new_request("", cwd=tmp_path, cwd_name="--cd", flags={"sandbox_mode": "read-only"})
    ceiling = Ceiling(request)
    assert ceiling.policy.mode == "read-only"
    assert ceiling.problems(Task(index=0, id="a", prompt="x", sandbox="read-only")) == []
    [problem] = ceiling.problems(Task(index=0, id="a", prompt="x", sandbox="workspace-write"))
    assert problem.startswith("`sandbox` 'workspace-write' loosens")
    # A bypass on the command line is the loosest ceiling: any task fits under it.
    bypass = Ceiling(new_request("", cwd=tmp_path, cwd_name="--cd", dangerously_bypass=True))
    assert bypass.problems(Task(index=0, id="a", prompt="x", sandbox="danger-full-access")) == []
