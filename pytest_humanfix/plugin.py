"""pytest hooks for pytest-humanfix. They hold no logic of their own: they delegate to the
modules named for what they do (settings, dataset, runner, report).

Nothing heavy is imported here: the plugin is loaded in every pytest run of an environment that
has it installed, and does nothing until --humanfix-model (or ini humanfix_model) is given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import settings as settings_mod

RUNNER = pytest.StashKey["Runner"]()  # set only while humanfix is active


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = settings_mod.Settings.from_config(config)
    if not settings.active:
        return
    from .session import start

    config.stash[RUNNER] = start(config, settings)


def pytest_collect_directory(path: Path, parent: pytest.Collector):
    if RUNNER in parent.config.stash and path == parent.config.invocation_params.dir:
        from .items import HumanfixDirectory

        # A fixed node id keeps item ids the same whatever pytest picks as rootdir (it may
        # pick the dataset's folder, since it reads option values as candidate paths).
        return HumanfixDirectory.from_parent(parent, path=path, nodeid="humanevalfix")
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    record = getattr(item, "humanfix_record", None)
    if call.when == "teardown" and record is not None:
        # Plain JSON-able data on the report crosses the xdist boundary unchanged.
        report.humanfix = record
    return report
