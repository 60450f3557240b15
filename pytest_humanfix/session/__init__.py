"""The pytest side of a run: starting it in each role (the controller, which alone writes files,
and the xdist workers), the collector and items, and the per-process `Runner`
(docs/architecture.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .runner import Runner

# The run's Runner, in the config's stash only while humanfix is active.
RUNNER: pytest.StashKey[Runner] = pytest.StashKey()
# Where the model runs and why (shared engines or a copy per worker), for the terminal's header.
LAYOUT_NOTE: pytest.StashKey[str] = pytest.StashKey()
