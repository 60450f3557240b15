"""This checkout's own defaults, for runs started from the repository root: what it needs to
evaluate itself, so the control run is `pytest --humanfix-model canonical -n 2` with nothing
else to give. Test helpers live in tests/conftest.py, not here.

(Plugins to leave out, such as langsmith's, go in pyproject's `addopts`: they load before any
conftest.py is read.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Where the shared data sits beside a checkout; the plugin's own default is the Hub dataset.
SHARED_DATASET = Path(__file__).resolve().parent.parent / "shared" / "data" / \
    "humanevalpack-python.jsonl"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # Before pytest_configure, where the plugin reads its settings (xdist workers run it too).
    # Whatever the user gave (option, ini, HUMANFIX_DATASET) wins over the shared file.
    if not config.pluginmanager.hasplugin("humanfix"):  # -p no:humanfix
        return
    given = (config.getoption("humanfix_dataset", None) or config.getini("humanfix_dataset")
             or os.environ.get("HUMANFIX_DATASET"))
    if not given and SHARED_DATASET.is_file():
        # With --humanfix-language, each language's shared file beside the Python one.
        languages = config.getoption("humanfix_language", None) or \
            config.getini("humanfix_language")
        config.option.humanfix_dataset = str(SHARED_DATASET).replace(
            "-python.", "-{language}.") if languages else str(SHARED_DATASET)
