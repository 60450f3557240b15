"""How an option is declared (pytest_humanfix/settings/options.py), on a small dataclass of its
own rather than `Settings`: the table `options_of` reads back, the help's "(default X)", the
command line and ini entries `add_options` declares, and which value `given` finds first."""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_humanfix.settings.converters import flag, positive_int, temperatures
from pytest_humanfix.settings.options import (
    Option,
    add_options,
    default_text,
    given,
    option,
    options_of,
)


@dataclass(frozen=True)
class Declared:
    """One field of each kind `option` declares."""

    rounds: int = option(3, "Repair rounds.", convert=positive_int, env="DEMO_ROUNDS",
                         metavar="N")
    strict_mode: bool = option(False, "Fail on a regression.")
    task_ids: str | None = option(None, "Tasks to run.", repeat=True)
    report_dir: str | None = option(None, "Where reports go (default: beside the run).",
                                    path=True, says_default=True)
    temps: tuple[float, ...] = option((0.4, 0.8), "Temperatures.", convert=temperatures)


TABLE = {declared.name: declared for declared in options_of(Declared)}


@pytest.mark.parametrize(("value", "text"), [
    (True, "on"), (False, "off"), (0.5, "0.5"), (3.0, "3"), (1e-6, "1e-06"),
    ((0.4, 0.8), "0.4,0.8"), (("a", "b"), "a,b"), ((), ""), (None, ""), (7, "7"),
    ("x.jsonl", "x.jsonl"),
])
def test_a_default_is_written_as_the_user_would_write_it(value, text):
    assert default_text(value) == text


def test_the_table_is_the_fields_in_order_named_as_on_the_command_line():
    assert list(TABLE) == ["rounds", "strict-mode", "task-ids", "report-dir", "temps"]
    rounds = TABLE["rounds"]
    assert (rounds.attr, rounds.dest, rounds.cli) == ("rounds", "humanfix_rounds",
                                                      "--humanfix-rounds")
    assert TABLE["strict-mode"].attr == "strict_mode"
    assert TABLE["strict-mode"].cli == "--humanfix-strict-mode"
    assert (rounds.default, rounds.env, rounds.metavar) == (3, "DEMO_ROUNDS", "N")
    assert TABLE["task-ids"].repeat and not rounds.repeat
    assert TABLE["report-dir"].path and TABLE["report-dir"].says_default


def test_a_converter_left_out_is_flag_for_a_bool_and_str_otherwise():
    assert TABLE["rounds"].convert is positive_int
    assert TABLE["strict-mode"].convert is flag and TABLE["strict-mode"].flag
    assert TABLE["task-ids"].convert is str and not TABLE["task-ids"].flag


def test_the_help_appends_the_default_and_the_environment_variable():
    assert TABLE["rounds"].help == "Repair rounds. (default 3; env DEMO_ROUNDS)"
    assert TABLE["temps"].help == "Temperatures. (default 0.4,0.8)"
    # No default worth stating: a flag (off), None, or a default the help says in its words.
    assert TABLE["strict-mode"].help == "Fail on a regression."
    assert TABLE["task-ids"].help == "Tasks to run."
    assert TABLE["report-dir"].help == "Where reports go (default: beside the run)."
    assert TABLE["report-dir"].shown_default == ""


def test_an_env_alone_is_told_without_a_default():
    alone = Option("model", "The model.", None, str, env="DEMO_MODEL")
    assert alone.help == "The model. (env DEMO_MODEL)"


class Recorder:
    """What `add_options` declares: pytest.Parser's group and ini calls, recorded."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, object]] = {}
        self.ini: dict[str, dict[str, object]] = {}
        self.group: tuple[str, str] | None = None

    def getgroup(self, name: str, description: str) -> Recorder:
        self.group = (name, description)
        return self

    def addoption(self, name: str, **attributes: object) -> None:
        self.options[name] = attributes

    def addini(self, name: str, help: str, **attributes: object) -> None:
        self.ini[name] = {"help": help, **attributes}


def test_each_option_is_a_command_line_option_and_an_ini_key_with_no_default():
    parser = Recorder()
    add_options(parser, tuple(TABLE.values()))  # type: ignore[arg-type]
    assert parser.group is not None and parser.group[0] == "humanfix"
    assert list(parser.options) == [declared.cli for declared in TABLE.values()]
    assert list(parser.ini) == [declared.dest for declared in TABLE.values()]
    # None everywhere, so `given` tells a value the user gave from a default left alone.
    assert all(entry["default"] is None for entry in [*parser.options.values(),
                                                       *parser.ini.values()])
    assert parser.options["--humanfix-strict-mode"] == {
        "dest": "humanfix_strict_mode", "action": "store_const", "const": True,
        "default": None, "help": "Fail on a regression."}
    assert parser.ini["humanfix_strict_mode"]["type"] == "bool"
    assert parser.options["--humanfix-task-ids"]["action"] == "append"
    assert parser.options["--humanfix-rounds"]["action"] == "store"
    assert parser.options["--humanfix-rounds"]["metavar"] == "N"
    assert parser.options["--humanfix-rounds"]["help"] == TABLE["rounds"].help
    assert "type" not in parser.ini["humanfix_rounds"]


def config(folder: Path, cli: object = None, ini: object = None,
           inipath: Path | None = None) -> pytest.Config:
    """A stand-in for the three things `given` reads of pytest.Config."""
    return types.SimpleNamespace(  # type: ignore[return-value]
        getoption=lambda dest: cli, getini=lambda dest: ini, inipath=inipath,
        rootpath=folder / "root", invocation_params=types.SimpleNamespace(dir=folder / "cwd"))


def test_the_command_line_comes_first_relative_to_where_pytest_was_started(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("DEMO_ROUNDS", "9")
    assert given(config(tmp_path, cli="5", ini="4"), TABLE["rounds"]) == ("5", tmp_path / "cwd")
    # A repeated option arrives as a list, joined as one comma list.
    assert given(config(tmp_path, cli=["Python/0", "Python/2"]), TABLE["task-ids"]) == \
        ("Python/0,Python/2", tmp_path / "cwd")


def test_the_ini_file_comes_next_relative_to_its_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_ROUNDS", "9")
    ini_file = tmp_path / "project" / "pytest.ini"
    assert given(config(tmp_path, ini="4", inipath=ini_file), TABLE["rounds"]) == \
        ("4", tmp_path / "project")
    # No ini file known (pytest's inipath None): relative to the root folder.
    assert given(config(tmp_path, ini="4"), TABLE["rounds"]) == ("4", tmp_path / "root")
    # A bool ini key is a bool.
    assert given(config(tmp_path, ini=False), TABLE["strict-mode"]) == (False, tmp_path / "root")


def test_the_environment_comes_last_and_an_empty_value_is_none_given(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_ROUNDS", "9")
    assert given(config(tmp_path, ini=""), TABLE["rounds"]) == ("9", tmp_path / "cwd")
    monkeypatch.setenv("DEMO_ROUNDS", "")
    assert given(config(tmp_path), TABLE["rounds"]) is None
    monkeypatch.delenv("DEMO_ROUNDS")
    assert given(config(tmp_path), TABLE["rounds"]) is None
    # An option without an environment variable ignores one of its name.
    monkeypatch.setenv("HUMANFIX_TEMPS", "0.1")
    assert given(config(tmp_path), TABLE["temps"]) is None
