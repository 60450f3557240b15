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
from .options import Option, add_options as _add_options


def add_options(parser: pytest.Parser) -> None:
    """`--humanfix-<name>` and the ini key `humanfix_<name>` of every option."""
    _add_options(parser, OPTIONS)


__all__ = ["BUILT_IN_AGENTS", "HUB_PLUS_DATASET", "OPTIONS", "PATH_OPTIONS", "Option",
           "Settings", "add_options", "fractions_read", "user_cache_dir"]
