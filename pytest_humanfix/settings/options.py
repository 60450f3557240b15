"""How an option is declared once: `option(...)` makes a field of `Settings` whose metadata
holds the option's help and converter, and `options_of` reads the fields back as the table
(`Option`) that the command line, the ini keys, the help's "(default X)" and docs/options.md
all come from (docs/options.md)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .converters import flag

T = TypeVar("T")

_METADATA_KEY = "humanfix_option"


@dataclass(frozen=True)
class _Declared:
    """What `option` keeps in a field's metadata, beside the field's name and default."""

    help: str
    convert: Callable[[str], object] | None
    env: str | None
    metavar: str | None
    repeat: bool
    path: bool
    says_default: bool
    formerly: str | None


def option(default: T, help: str, *, convert: Callable[[str], T] | None = None,
           env: str | None = None, metavar: str | None = None, repeat: bool = False,
           path: bool = False, says_default: bool = False, formerly: str | None = None) -> T:
    """A `Settings` field that is also `--humanfix-<name>` and the ini key `humanfix_<name>`.

    `convert` turns the user's text into the field's type (str when left out; a bool default
    makes a flag). `repeat`: may be given several times on the command line, joined by commas.
    `path`: a relative path is taken from where it was given (the ini file's folder for an ini
    value). `says_default`: the help text tells the default itself, as it depends on other
    settings (the language's timeout, the report folder), so "(default X)" is not appended.
    `formerly`: the option's earlier name, still read (command line, then ini) where the new
    one is not given, under a deprecation warning (`former_names_given`)."""
    declared = _Declared(help=help, convert=convert, env=env, metavar=metavar, repeat=repeat,
                         path=path, says_default=says_default, formerly=formerly)
    return dataclasses.field(default=default, metadata={_METADATA_KEY: declared})


def default_text(value: object) -> str:
    """A default as the user would write it: the help's "(default X)" and the docs' column."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(default_text(part) for part in value)
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Option:
    """One setting as the table holds it: `--humanfix-<name>` on the command line and
    `humanfix_<name>` in the ini, its typed default and how the user's text is converted."""

    name: str
    written_help: str  # as declared: without the "(default X)" and environment variable parts
    default: object
    convert: Callable[[str], object]
    env: str | None = None
    metavar: str | None = None
    repeat: bool = False
    path: bool = False
    says_default: bool = False
    formerly: str | None = None  # the earlier name, deprecated

    @property
    def flag(self) -> bool:
        return isinstance(self.default, bool)

    @property
    def attr(self) -> str:
        """The `Settings` field."""
        return self.name.replace("-", "_")

    @property
    def dest(self) -> str:
        return "humanfix_" + self.attr

    @property
    def cli(self) -> str:
        return "--humanfix-" + self.name

    @property
    def former(self) -> Option | None:
        """The option under its earlier name, which is read where the new one is not given."""
        if self.formerly is None:
            return None
        return dataclasses.replace(self, name=self.formerly, formerly=None, env=None)

    @property
    def shown_default(self) -> str:
        """The default the help states ("" when it has none worth stating, or states it in
        its own words)."""
        if self.says_default or self.flag:
            return ""
        return default_text(self.default)

    @property
    def help(self) -> str:
        told = [f"default {self.shown_default}"] if self.shown_default else []
        if self.env:
            told.append(f"env {self.env}")
        if self.formerly:
            told.append(f"formerly --humanfix-{self.formerly}, deprecated")
        return self.written_help + (f" ({'; '.join(told)})" if told else "")


def options_of(settings_class: type[Any]) -> tuple[Option, ...]:
    """The option table of a dataclass whose fields were declared with `option`, in order."""
    table = []
    for declared_field in dataclasses.fields(settings_class):
        declared: _Declared = declared_field.metadata[_METADATA_KEY]
        convert: Callable[[str], object] = declared.convert or (
            flag if isinstance(declared_field.default, bool) else str)
        table.append(Option(
            name=declared_field.name.replace("_", "-"), written_help=declared.help,
            default=declared_field.default, convert=convert, env=declared.env,
            metavar=declared.metavar, repeat=declared.repeat, path=declared.path,
            says_default=declared.says_default, formerly=declared.formerly))
    return tuple(table)


def add_options(parser: pytest.Parser, options: tuple[Option, ...]) -> None:
    group = parser.getgroup("humanfix", "HumanEvalFix code-repair evaluation (pytest-humanfix)")
    for declared in options:
        _add_option(parser, group, declared, declared.help)
        if declared.former is not None:
            _add_option(parser, group, declared.former, f"deprecated: {declared.cli}")


def _add_option(parser: pytest.Parser, group: pytest.OptionGroup, declared: Option,
                help: str) -> None:
    # No default here: `given` must tell a value the user gave from none.
    if declared.flag:
        group.addoption(declared.cli, dest=declared.dest, action="store_const", const=True,
                        default=None, help=help)
        parser.addini(declared.dest, help, type="bool", default=None)
    else:
        # argparse formats the help with %: a percentage in it is written %%.
        group.addoption(declared.cli, dest=declared.dest, default=None,
                        metavar=declared.metavar, help=help.replace("%", "%%"),
                        action="append" if declared.repeat else "store")
        parser.addini(declared.dest, help, default=None)


def given(config: pytest.Config, declared: Option) -> tuple[str | bool, Path] | None:
    """The value the user gave (command line, then ini, each by the option's name, then by its
    former one; then environment variable) and the folder a relative path in it is relative
    to; None when none was given."""
    names = [declared, *([declared.former] if declared.former else [])]
    for name in names:
        value = config.getoption(name.dest)
        if isinstance(value, list):  # a repeated option
            value = ",".join(value)
        if value is not None:
            return value, config.invocation_params.dir
    for name in names:
        value = config.getini(name.dest)
        if value not in (None, ""):
            base = config.inipath.parent if config.inipath else config.rootpath
            return value, base
    if declared.env and os.environ.get(declared.env):
        return os.environ[declared.env], config.invocation_params.dir
    return None


def former_names_given(config: pytest.Config, options: tuple[Option, ...]) -> list[str]:
    """A deprecation line for each option the user gave by its former name."""
    lines = []
    for declared in options:
        former = declared.former
        if former is None or (config.getoption(former.dest) is None
                              and config.getini(former.dest) in (None, "")):
            continue
        lines.append(f"{former.cli} / {former.dest} is deprecated: it is now {declared.cli} / "
                     f"{declared.dest}, which says what it is; the old name still works (where "
                     "the new one is not given) and will be removed: rename it.")
    return lines
