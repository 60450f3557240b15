"""The option table: each option declared once, as a field of `Settings`, with a typed default
its converter gives back, and the command line, the ini file and the environment read alike."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import pytest

from pytest_humanfix.settings import (
    OPTIONS, PATH_OPTIONS, Option, Settings, deprecated_names, fractions_read)

# A value as a user would write it, for each option without a default to convert back.
SAMPLES = {
    "model": "buggy", "language": "python,js", "max": "3", "task": "Python/0,Python/2",
    "shard": "1/2", "max-length": "1024", "repeat-check": "2", "repeat-with": "canonical",
    "devices": "0,1", "vllm-python": "/usr/bin/python3", "timeout": "3.5",
    "item-timeout": "9", "fail-under": "0.3", "baseline": "/tmp/base.jsonl",
    "max-regressions": "0", "jsonl": "/tmp/out.jsonl", "dataset-revision": "main",
}


def conforms(value: object, hint: object) -> bool:
    """Whether `value` is of the annotated type, tuples' items included."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arm) for arm in typing.get_args(hint))
    if origin is tuple:
        items = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(items) == 2 and items[1] is Ellipsis:
            return all(conforms(item, items[0]) for item in value)
        return len(items) == len(value) and all(map(conforms, value, items))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, float)
    return isinstance(value, typing.cast(type, hint))


def text_of(option: Option) -> str:
    return SAMPLES.get(option.name) or option.shown_default or "true"


HINTS = typing.get_type_hints(Settings)


def test_the_table_is_the_fields_of_settings_in_order():
    assert [option.attr for option in OPTIONS] == \
        [field.name for field in dataclasses.fields(Settings)]
    assert Settings() == Settings(**{option.attr: option.default for option in OPTIONS})


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_each_default_is_of_the_fields_type_and_its_text_converts_back(option: Option):
    assert conforms(option.default, HINTS[option.attr])
    if option.shown_default:
        assert option.convert(option.shown_default) == option.default
    else:  # no default to show: the converter's type checked on a value a user would write
        assert option.default in (None, False, ()), option.name
        if option.name in SAMPLES:
            assert conforms(option.convert(SAMPLES[option.name]), HINTS[option.attr])


def test_every_option_without_a_default_to_show_has_a_sample():
    without = {option.name for option in OPTIONS if option.default is None}
    assert without == set(SAMPLES)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_the_help_states_the_default_once_unless_it_says_it_itself(option: Option):
    assert option.help.startswith(option.written_help)
    if option.shown_default:
        assert option.help.count("(default ") == 1
        assert f"default {option.shown_default}" in option.help
        assert "default" not in option.written_help.replace("by default", "")
    if option.says_default:
        assert "(default" in option.written_help and option.default is None
    if option.env:
        assert f"env {option.env}" in option.help


def test_flags_are_the_bool_fields():
    assert {option.name for option in OPTIONS if option.flag} == \
        {"strict", "serve", "in-process", "resume"}
    assert all(option.convert("false") is False for option in OPTIONS if option.flag)


def test_the_path_options_are_those_given_as_files_or_folders():
    assert PATH_OPTIONS == {"dataset", "report-dir", "jsonl", "baseline", "plus-dataset",
                            "vllm-python"}


class FakeConfig:
    """The part of pytest.Config that Settings.from_config reads."""

    def __init__(self, folder: Path, cli: dict[str, object] | None = None,
                 ini: dict[str, object] | None = None) -> None:
        self.cli, self.ini = cli or {}, ini or {}
        self.invocation_params = types.SimpleNamespace(dir=folder)
        self.inipath = folder / "pytest.ini"
        self.rootpath = folder

    def getoption(self, dest: str) -> object:
        return self.cli.get(dest)

    def getini(self, dest: str) -> object:
        return self.ini.get(dest)


def given(option: Option, where: str) -> object:
    """The sample as the command line (a repeated option: a list; a flag: True) or the ini file
    (a flag: a bool, as pytest reads a bool ini key) gives it."""
    if option.flag:
        return True
    text = text_of(option)
    return [text] if option.repeat and where == "cli" else text


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_the_command_line_and_the_ini_file_give_the_same_value(option: Option, tmp_path):
    # What an option needs beside it: the check it names, the model an engine serves.
    needed = {"repeat-with": {"humanfix_repeat_check": "1"},
              "serve": {"humanfix_model": "buggy"},
              "mutation": {"humanfix_variant": "impossible"}}.get(option.name, {})
    by_cli = Settings.from_config(FakeConfig(
        tmp_path, cli={option.dest: given(option, "cli"), **needed}))
    by_ini = Settings.from_config(FakeConfig(
        tmp_path, ini={option.dest: given(option, "ini"), **needed}))
    value = getattr(by_cli, option.attr)
    assert value == getattr(by_ini, option.attr)
    if option.flag:
        assert value is True
    elif not option.path:
        assert value == option.convert(text_of(option))


def test_the_command_line_wins_over_the_ini_file_and_that_over_the_environment(
        tmp_path, monkeypatch):
    monkeypatch.setenv("HUMANFIX_DATASET", "/env/tasks.jsonl")
    assert Settings.from_config(FakeConfig(tmp_path)).dataset == "/env/tasks.jsonl"
    ini = {"humanfix_dataset": "/ini/tasks.jsonl"}
    assert Settings.from_config(FakeConfig(tmp_path, ini=ini)).dataset == "/ini/tasks.jsonl"
    cli = {"humanfix_dataset": "/cli/tasks.jsonl"}
    assert Settings.from_config(FakeConfig(tmp_path, cli=cli, ini=ini)).dataset == \
        "/cli/tasks.jsonl"


def test_a_relative_path_is_taken_from_where_it_was_given(tmp_path, monkeypatch):
    monkeypatch.delenv("HUMANFIX_DATASET", raising=False)
    settings = Settings.from_config(FakeConfig(tmp_path, cli={"humanfix_jsonl": "out.jsonl"}))
    assert settings.jsonl == str(tmp_path / "out.jsonl")
    assert Settings.from_config(FakeConfig(tmp_path)).dataset == Settings().dataset


def test_a_default_left_alone_is_not_a_value_given(tmp_path):
    """--humanfix-max-length alone keeps the reply budget's default; both are an error."""
    settings = Settings.from_config(FakeConfig(tmp_path, ini={"humanfix_max_length": "900"}))
    assert (settings.max_length, settings.max_new_tokens) == (900, 512)
    both = {"humanfix_max_length": "900", "humanfix_max_new_tokens": "512"}
    with pytest.raises(pytest.UsageError, match="give one of them"):
        Settings.from_config(FakeConfig(tmp_path, cli=both))


def test_a_bad_value_names_the_option_and_what_it_takes(tmp_path):
    with pytest.raises(pytest.UsageError) as raised:
        Settings.from_config(FakeConfig(tmp_path, cli={"humanfix_max": "0"}))
    assert str(raised.value) == "--humanfix-max / humanfix_max: '0' must be 1 or more"


@pytest.mark.parametrize(("dest", "text", "says"), [
    ("humanfix_fail_under", "35", "--humanfix-fail-under / humanfix_fail_under: '35' is not a "
                                  "fraction: write 0.35 or 35%"),
    ("humanfix_alpha", "5", "--humanfix-alpha / humanfix_alpha: '5' is not a fraction: write "
                            "0.05 or 5%"),
])
def test_a_gate_value_in_the_wrong_unit_is_a_usage_error_before_any_task(tmp_path, dest, text,
                                                                          says):
    with pytest.raises(pytest.UsageError) as raised:
        Settings.from_config(FakeConfig(tmp_path, cli={dest: text}))
    assert str(raised.value) == says


def test_the_fractions_given_are_told_as_read(tmp_path):
    config = FakeConfig(tmp_path, cli={"humanfix_fail_under": "35%"},
                        ini={"humanfix_alpha": "0.1"})
    settings = Settings.from_config(config)
    assert (settings.fail_under, settings.alpha) == (pytest.approx(0.35), 0.1)
    assert fractions_read(config) == ["fail-under: 35% read as 0.35 (35%)",
                                      "alpha: 0.1 read as 0.1 (10%)"]
    assert fractions_read(FakeConfig(tmp_path)) == []  # nothing given, nothing told


def test_an_engine_to_serve_needs_a_model_and_a_brought_agent_alone_activates(tmp_path):
    with pytest.raises(pytest.UsageError, match="name it with --humanfix-model SPEC"):
        Settings.from_config(FakeConfig(tmp_path, cli={"humanfix_serve": True}))
    assert Settings(agent="agents.py:fix").active  # an agent that calls its own model
    assert not Settings(agent="repair").active and Settings(model="buggy").active


def test_a_renamed_option_still_reads_its_former_name_and_says_it_is_deprecated(tmp_path):
    """--humanfix-resample-temperature was the ask-again schedule of repair and tools, which
    resample never read: it is --humanfix-ask-again-temperature now, and the old name works on
    the command line and in the ini file, where the new one is not given, with a warning."""
    [renamed] = [option for option in OPTIONS if option.formerly]
    assert (renamed.cli, renamed.former.cli, renamed.former.dest) == (
        "--humanfix-ask-again-temperature", "--humanfix-resample-temperature",
        "humanfix_resample_temperature")
    assert "formerly --humanfix-resample-temperature, deprecated" in renamed.help
    for where in ("cli", "ini"):
        config = FakeConfig(tmp_path, **{where: {"humanfix_resample_temperature": "0.6,0.9"}})
        assert Settings.from_config(config).ask_again_temperature == (0.6, 0.9)
        [line] = deprecated_names(config)
        assert line.startswith("--humanfix-resample-temperature / humanfix_resample_temperature "
                               "is deprecated: it is now --humanfix-ask-again-temperature")
    both = FakeConfig(tmp_path, cli={"humanfix_ask_again_temperature": "0.5"},
                      ini={"humanfix_resample_temperature": "0.6"})
    assert Settings.from_config(both).ask_again_temperature == (0.5,)  # the command line wins
    new = FakeConfig(tmp_path, ini={"humanfix_ask_again_temperature": "0.5",
                                    "humanfix_resample_temperature": "0.6"})
    assert Settings.from_config(new).ask_again_temperature == (0.5,)  # the new name wins
    assert deprecated_names(FakeConfig(tmp_path)) == []
