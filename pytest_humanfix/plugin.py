"""pytest hooks for pytest-humanfix, and the humanfix_agent fixture a conftest.py overrides.
They hold no logic of their own: they delegate to the modules named for what they do (settings,
dataset, runner, report, the agent loader; docs/architecture.md).

Nothing heavy is imported here: the plugin is loaded in every pytest run of an environment that
has it installed, and does nothing until --humanfix-model (or ini humanfix_model) is given.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from . import settings as settings_mod
from .session import LAYOUT_NOTE, RUNNER


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    settings = settings_mod.Settings.from_config(config)
    if not settings.active:
        return None
    from .session.placement import auto_num_workers

    return auto_num_workers(settings)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = settings_mod.Settings.from_config(config)
    if not settings.active:
        return
    from .session.start import start

    config.stash[RUNNER] = start(config, settings)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    runner = config.stash.get(RUNNER, None)
    if runner is None:
        return None
    layout = [config.stash[LAYOUT_NOTE]] if LAYOUT_NOTE in config.stash else []
    return [f"humanfix {note}"
            for note in layout + runner.sandbox_choice.notes + runner.language_notes()
            + settings_mod.fractions_read(config)]


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if RUNNER in parent.config.stash and path == parent.config.invocation_params.dir:
        from .session.items import HumanfixDirectory

        # A fixed node id keeps item ids the same whatever pytest picks as rootdir (it may
        # pick the dataset's folder, since it reads option values as candidate paths).
        return HumanfixDirectory.from_parent(parent, path=path, nodeid="humanevalfix")
    return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    # Outside pytest-timeout's own wrapper, which reads the item's timeout marker. The model
    # loads first, so that a download never counts against one task's timeout.
    if RUNNER in item.config.stash and hasattr(item, "task"):
        from .session.timeouts import apply_item_timeout

        runner = item.config.stash[RUNNER]
        runner.preload(getattr(item, "tasks_ahead", list))
        apply_item_timeout(item, runner.settings, runner.limit_for(item.task),
                           runner.plus_limit_for(item.task) if runner.workload.plus else None)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    record = getattr(item, "humanfix_record", None)
    if call.when == "teardown" and record is not None:
        # Plain JSON-able data on the report crosses the xdist boundary unchanged (xdist sends
        # the report's attributes); pytest declares no attribute for a plugin's data.
        report.humanfix = record  # type: ignore[attr-defined]
        if item.config.pluginmanager.hasplugin("html"):
            from .reporting.html_report import trajectory_extras

            # pytest-html reads `extras` off the reports; plain dicts cross xdist as they are.
            extras = getattr(report, "extras", [])
            report.extras = [*extras, *trajectory_extras(record)]  # type: ignore[attr-defined]
    return report


@pytest.fixture(scope="session")
def humanfix_agent(pytestconfig: pytest.Config) -> object:
    """The agent that repairs each task: the one --humanfix-agent module:callable names, or
    None for a built-in one. Override it in a conftest.py to bring your own (docs/own-agent.md)."""
    runner = pytestconfig.stash.get(RUNNER, None)
    if runner is None:
        return None
    from .agent.loader import agent_of

    return agent_of(pytestconfig, runner.settings.agent)


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(RUNNER, None)
    if runner is not None:
        runner.close()
