"""Typed tool options and the implementation table: every shipped harness's options fit its
tools' models; a misspelt, mistyped or unknown one fails when the harness loads, naming the
harness, the tool, the key and what is accepted; the table imports no tool code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.core.errors import ConfigError, ExitCode
from oiexec.harness import data
from oiexec.harness.data import harness_ids, load_manifest, load_spec, load_tool_schemas
from oiexec.tools import options as options_module
from oiexec.tools.entry import ToolEntry
from oiexec.tools.framework import IMPLS, register
from oiexec.tools.options import FsReadOptions, ShellOptions, ToolOptions
from oiexec.tools.results import Result
from oiexec.tools.table import TABLE, OptionsError, load_function, options_model

SHIPPED = Path(__file__).resolve().parents[2] / "harnesses"


@pytest.mark.parametrize("harness_id", harness_ids())
def test_every_shipped_harness_validates(harness_id: str) -> None:
    for entry in load_spec(harness_id).tools:
        assert entry.impl in TABLE, entry.impl
        typed = entry.tool_options()
        assert isinstance(typed, options_model(entry.impl))
        # Every key the manifest sets is a declared field and arrives with its value.
        for key, value in {**entry.options, **entry.limits}.items():
            assert getattr(typed, key) == value, (entry.name, key)


def test_the_table_names_real_functions_and_models() -> None:
    for name, ref in TABLE.items():
        assert callable(load_function(name)), ref.target
        assert issubclass(options_model(name), ToolOptions)
        assert name in IMPLS and IMPLS[name].raw == ref.raw
    assert set(IMPLS) >= set(TABLE)


def test_option_defaults_are_the_ones_the_tools_used() -> None:
    from oiexec.tools.interpreters import DEFAULT_TIMEOUT

    assert options_module.ExecuteOptions().timeout_s == DEFAULT_TIMEOUT
    shell = ShellOptions()
    assert (shell.timeout_unit, shell.default_timeout_s, shell.max_timeout_s) == ("s", 120, 600)
    assert shell.max_output_chars == 30_000 and shell.task_prefix == "bg_"
    read = FsReadOptions()
    assert (read.offset_base, read.default_limit, read.max_line_chars) == (1, 2000, 2000)


def test_importing_the_table_imports_no_tool_code() -> None:
    code = (
        "import sys, oiexec.tools.table, oiexec.tools.entry\n"
        "print(*sorted(m for m in sys.modules if m.startswith('oiexec.tools.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["oiexec.tools.entry", "oiexec.tools.table"]


def test_an_entry_without_options_does_not_load_the_models() -> None:
    code = (
        "import sys\n"
        "from oiexec.tools.entry import ToolEntry\n"
        "ToolEntry(name='exec_command', impl='exec_command')\n"
        "print('oiexec.tools.options' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("table", "values", "expected"),
    [
        ("options", {"max_line_char": 10}, "unknown key `max_line_char` in `options`"),
        ("limits", {"default_limt": 10}, "unknown key `default_limt` in `limits`"),
        ("options", {"offset_base": "1"}, "`offset_base` in `options`: Input should be 0 or 1"),
        ("options", {"unchanged_note": "yes"}, "`unchanged_note` in `options`: Input should be"),
    ],
)
def test_a_bad_entry_names_the_tool_the_key_and_what_is_accepted(
    table: str, values: dict[str, object], expected: str
) -> None:
    with pytest.raises(ValueError) as info:
        ToolEntry(name="Read", impl="fs_read", **{table: values})  # type: ignore[arg-type]
    message = str(info.value)
    assert "tool `Read` (impl `fs_read`)" in message and expected in message
    assert "`fs_read` accepts: unchanged_note (bool), offset_base (Literal[0, 1])" in message


def test_an_implementation_without_options_says_so() -> None:
    with pytest.raises(ValueError, match="`task_stop` takes no options"):
        ToolEntry(name="KillShell", impl="task_stop", options={"all": True})


# --- a harness folder outside the package ----------------------------------------------


@pytest.fixture
def user_harnesses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A harnesses folder holding the shipped `claude-code` and whatever a test adds."""
    root = tmp_path / "harnesses"
    shutil.copytree(SHIPPED / "claude-code", root / "claude-code")
    real = data.data_dir
    monkeypatch.setattr(data, "data_dir", lambda name: root if name == "harnesses" else real(name))
    caches = (load_manifest, load_spec, load_tool_schemas)
    for cached in caches:
        cached.cache_clear()
    yield root
    for cached in caches:
        cached.cache_clear()


def _harness(root: Path, tools: str) -> None:
    folder = root / "mine"
    folder.mkdir()
    (folder / "harness.toml").write_text(
        f'id = "mine"\nextends = "claude-code"\n{tools}', encoding="utf-8"
    )


_READ = '[[tools]]\nname = "Read"\nimpl = "fs_read"\n'


def test_a_misspelt_option_in_a_user_harness_fails_at_load(user_harnesses: Path) -> None:
    _harness(user_harnesses, _READ + "options = { offset_base = 1, unchanged_notes = true }\n")
    with pytest.raises(ConfigError) as info:
        load_spec("mine")
    message = info.value.message
    assert message.startswith("harness `mine`: tool `Read` (impl `fs_read`): ")
    assert "unknown key `unchanged_notes` in `options`" in message
    assert "unchanged_note (bool)" in message
    assert info.value.exit_code == ExitCode.CONFIG


def test_a_mistyped_limit_in_a_user_harness_fails_at_load(user_harnesses: Path) -> None:
    _harness(user_harnesses, _READ + 'limits = { default_limit = "2000" }\n')
    with pytest.raises(ConfigError) as info:
        load_spec("mine")
    assert info.value.message == (
        "harness `mine`: tool `Read` (impl `fs_read`): `default_limit` in `limits`: a limit is "
        "a whole number (got '2000')"
    )


def test_an_unknown_implementation_fails_at_load(user_harnesses: Path) -> None:
    _harness(user_harnesses, '[[tools]]\nname = "Read"\nimpl = "fs_raed"\n')
    with pytest.raises(ConfigError, match=r"no tool implementation `fs_raed` \(tool `Read`\)"):
        load_spec("mine")


def test_the_cli_reports_a_bad_option_as_a_config_error(
    user_harnesses: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from oiexec.cli import main

    _harness(user_harnesses, _READ + "options = { offset_bse = 1 }\n")
    monkeypatch.setattr(sys, "argv", ["interpreter", "harness", "show", "mine"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "harness `mine`: tool `Read` (impl `fs_read`): unknown key `offset_bse`" in err


def test_the_shipped_harness_still_loads_from_a_user_folder(user_harnesses: Path) -> None:
    _harness(user_harnesses, "")
    assert [t.name for t in load_spec("mine").tools] == [
        t.name for t in load_spec("claude-code").tools
    ]


# --- implementations outside the table ---------------------------------------------------


def test_register_adds_an_implementation_outside_the_table() -> None:
    @register("test_options_echo")
    def echo(inv: object) -> Result:
        return Result("echo")

    assert "test_options_echo" in IMPLS and IMPLS["test_options_echo"].run is echo
    # Its options are not checked (it has no model): it reads them untyped.
    entry = ToolEntry(name="echo", impl="test_options_echo", options={"anything": 1})
    assert type(entry.tool_options()) is ToolOptions


def test_register_refuses_a_name_of_the_table() -> None:
    original = IMPLS["shell"].run
    with pytest.raises(ValueError, match=r"`shell` is an implementation of oiexec\.tools\.table"):
        register("shell")
    assert IMPLS["shell"].run is original


def test_options_error_is_a_value_error() -> None:
    assert issubclass(OptionsError, ValueError)
