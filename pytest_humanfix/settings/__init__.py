"""The run's options, each declared once as a field of `Settings` (docs/options.md)."""

from __future__ import annotations

import pytest

from .converters import BUILT_IN_AGENTS
from .declared import (
    HUB_PLUS_DATASET,
    OPTIONS,
    PATH_OPTIONS,
    Settings,
    fractions_read,
    user_cache_dir,
)
from .options import Option, add_options as _add_options, former_names_given


def add_options(parser: pytest.Parser) -> None:
    """`--humanfix-<name>` and the ini key `humanfix_<name>` of every option, and the former
    name of an option renamed."""
    _add_options(parser, OPTIONS)


def deprecated_names(config: pytest.Config) -> list[str]:
    """A line for each option the user gave by a former name, which still works."""
    return former_names_given(config, OPTIONS)


__all__ = ["BUILT_IN_AGENTS", "HUB_PLUS_DATASET", "OPTIONS", "PATH_OPTIONS", "Option",
           "Settings", "add_options", "deprecated_names", "fractions_read", "user_cache_dir"]
