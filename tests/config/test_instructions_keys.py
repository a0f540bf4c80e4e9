"""`developer_instructions` and `model_instructions_file` from every config layer (user config,
profiles, the environment, `-c`), where a relative `model_instructions_file` points, and what
a project's config may make the runner read (runner/instructions.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oiexec.config.loader import ConfigInputs, LoadedConfig, load_config
from oiexec.core.errors import ConfigError, UsageError
from oiexec.core.policy import SandboxPolicy
from oiexec.runner.instructions import INSTRUCTIONS_MAX, run_instructions
from tests.conftest import git


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q")
    return path


def _load(home: Path, cwd: Path, *overrides: str, profile: str | None = None,
          environ: dict[str, str] | None = None) -> LoadedConfig:  # fmt: skip
    inputs = ConfigInputs(cwd=cwd, profile=profile, overrides=overrides)
    return load_config(inputs, home=home, environ=environ or {})


def _base(config: LoadedConfig, cwd: Path, *, deny: tuple[Path, ...] = ()) -> str | None:
    policy = SandboxPolicy(mode="read-only", cwd=cwd, deny_paths=deny)
    instructions, _ = run_instructions(config, cwd, policy, appended=None, review=False)
    return instructions.base


def test_developer_instructions_precedence(oi_home: Path, project: Path) -> None:
    (oi_home / "config.toml").write_text(
        'developer_instructions = "from user"\n'
        '[profiles.ci]\ndeveloper_instructions = "from profile"\n'
    )
    assert _load(oi_home, project).settings.developer_instructions == "from user"
    assert _load(oi_home, project, profile="ci").settings.developer_instructions == ("from profile")
    env = {"OIEXEC_DEVELOPER_INSTRUCTIONS": "from env"}
    assert _load(oi_home, project, profile="ci", environ=env).settings.developer_instructions == (
        "from env"
    )
    given = _load(oi_home, project, 'developer_instructions="from -c"', profile="ci", environ=env)
    assert given.settings.developer_instructions == "from -c"


def test_developer_text_joins_config_and_flag(oi_home: Path, project: Path, tmp_path: Path) -> None:
    (oi_home / "config.toml").write_text('developer_instructions = "config text"\n')
    config = _load(oi_home, project)
    policy = SandboxPolicy(mode="read-only", cwd=project)
    appended = tmp_path / "append.md"
    appended.write_text("file text\n")
    made, notes = run_instructions(config, project, policy, appended=f"@{appended}", review=False)
    assert made.developer == "config text\n\nfile text"
    assert made.base is None and notes == []
    # A profile may switch it off again with a blank value.
    blank = _load(oi_home, project, 'developer_instructions=""')
    made, _ = run_instructions(blank, project, policy, appended=None, review=False)
    assert made.developer is None


def test_relative_file_is_relative_to_the_config_file_that_sets_it(
    oi_home: Path, project: Path
) -> None:
    (oi_home / "base.md").write_text("home base $cwd")
    (oi_home / "prompts").mkdir()
    (oi_home / "prompts" / "ci.md").write_text("profile base")
    (project / "local.md").write_text("cwd base")
    (oi_home / "config.toml").write_text('model_instructions_file = "base.md"\n')
    (oi_home / "ci.config.toml").write_text('model_instructions_file = "prompts/ci.md"\n')
    assert _base(_load(oi_home, project), project) == "home base $cwd"
    assert _base(_load(oi_home, project, profile="ci"), project) == "profile base"
    # `-c` and the environment name paths relative to the run's directory.
    assert _base(_load(oi_home, project, "model_instructions_file='local.md'"), project) == (
        "cwd base"
    )
    env = {"OIEXEC_MODEL_INSTRUCTIONS_FILE": "local.md"}
    assert _base(_load(oi_home, project, environ=env), project) == "cwd base"


def test_note_says_the_base_instructions_are_replaced(oi_home: Path, project: Path) -> None:
    (oi_home / "base.md").write_text("mine")
    (oi_home / "config.toml").write_text('model_instructions_file = "base.md"\n')
    config = _load(oi_home, project)
    policy = SandboxPolicy(mode="read-only", cwd=project)
    _, notes = run_instructions(config, project, policy, appended=None, review=False)
    assert notes == [
        f"model_instructions_file ({oi_home / 'config.toml'}:1): {oi_home / 'base.md'} "
        "replaces the harness's base instructions"
    ]
    made, notes = run_instructions(config, project, policy, appended=None, review=True)
    assert made.base is None
    assert "not used by review" in notes[0]


def _trust(home: Path, project: Path) -> None:
    (home / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')


def _project_config(project: Path, value: str) -> None:
    (project / ".openinterpreter").mkdir(exist_ok=True)
    (project / ".openinterpreter" / "config.toml").write_text(
        f"model_instructions_file = {value!r}\n".replace("'", '"')
    )


def test_project_config_reads_a_file_inside_the_project(oi_home: Path, project: Path) -> None:
    _trust(oi_home, project)
    _project_config(project, "prompt.md")
    (project / ".openinterpreter" / "prompt.md").write_text("project base")
    assert _base(_load(oi_home, project), project) == "project base"
    (project / "docs").mkdir()
    (project / "docs" / "base.md").write_text("docs base")
    _project_config(project, "../docs/base.md")
    assert _base(_load(oi_home, project), project) == "docs base"
    # A link that stays inside the project is followed (to its real path, opened beneath).
    os.symlink("../docs/base.md", project / ".openinterpreter" / "link.md")
    _project_config(project, "link.md")
    assert _base(_load(oi_home, project), project) == "docs base"


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink", "home"])
def test_project_config_cannot_reach_outside_the_project(
    oi_home: Path, project: Path, tmp_path: Path, how: str
) -> None:
    # In the user's home for `~`: a project's `~` would reach it if it were expanded.
    secret = (Path(os.environ["HOME"]) if how == "home" else tmp_path) / "secret.txt"
    secret.write_text("SECRET")
    _trust(oi_home, project)
    if how == "absolute":
        _project_config(project, str(secret))
    elif how == "dotdot":
        _project_config(project, "../../secret.txt")
    elif how == "home":
        _project_config(project, "~/secret.txt")
    else:
        _project_config(project, "link.md")
        os.symlink(secret, project / ".openinterpreter" / "link.md")
    config = _load(oi_home, project)
    with pytest.raises(ConfigError) as raised:
        _base(config, project)
    message = raised.value.message
    assert "SECRET" not in message
    assert message.startswith("model_instructions_file ")
    assert "config.toml:1" in message
    # The same file named in the user's own config is the user's choice, and read.
    user = _load(oi_home, project, f"model_instructions_file={str(secret)!r}".replace("'", '"'))
    assert _base(user, project) == "SECRET"


def test_project_config_honours_deny_paths(oi_home: Path, project: Path) -> None:
    _trust(oi_home, project)
    (project / "private").mkdir()
    (project / "private" / "base.md").write_text("hidden")
    _project_config(project, "../private/base.md")
    with pytest.raises(ConfigError, match="denied"):
        _base(_load(oi_home, project), project, deny=(project / "private",))


def test_untrusted_project_config_is_not_read(oi_home: Path, project: Path) -> None:
    _project_config(project, "/etc/passwd")
    config = _load(oi_home, project)
    assert config.settings.model_instructions_file is None
    assert _base(config, project) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b"", "the file is empty"),
        (b"\n  \n", "the file is empty"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b"x" * (INSTRUCTIONS_MAX + 1), "limit"),
    ],
)
def test_bad_model_instructions_file(
    oi_home: Path, project: Path, content: bytes | None, expected: str
) -> None:
    if content is not None:
        (oi_home / "base.md").write_bytes(content)
    (oi_home / "config.toml").write_text('model_instructions_file = "base.md"\n')
    with pytest.raises(ConfigError, match=expected) as raised:
        _base(_load(oi_home, project), project)
    assert str(oi_home / "base.md") in raised.value.message
    assert "\n" not in raised.value.message


def test_blank_model_instructions_file_is_a_config_error(oi_home: Path, project: Path) -> None:
    (oi_home / "config.toml").write_text('model_instructions_file = " "\n')
    with pytest.raises(ConfigError, match="model_instructions_file"):
        _load(oi_home, project)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b" \n", "the file is empty"),
        (b"\xc3(", "not valid UTF-8"),
        (b"y" * (INSTRUCTIONS_MAX + 1), "limit"),
    ],
)
def test_bad_append_file_is_a_usage_error(
    oi_home: Path, project: Path, tmp_path: Path, content: bytes | None, expected: str
) -> None:
    path = tmp_path / "append.md"
    if content is not None:
        path.write_bytes(content)
    policy = SandboxPolicy(mode="read-only", cwd=project)
    with pytest.raises(UsageError, match=expected) as raised:
        run_instructions(
            _load(oi_home, project), project, policy, appended=f"@{path}", review=False
        )
    assert raised.value.message.startswith(f"--append-system-prompt @{path}: ")
