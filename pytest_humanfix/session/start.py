"""Starting a humanfix run in one pytest process: the controller or an xdist worker.

Each role builds its Runner complete (`controller.start`, `worker.start`), after validating
everything the user gave before any work is done, so a bad model spec, dataset or report folder
is a short usage error, not a traceback after an hour (docs/architecture.md).
"""

from __future__ import annotations

import pytest

from ..agent.loader import settle_agent
from ..settings import Settings
from .runner import Runner


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def start(config: pytest.Config, settings: Settings) -> Runner:
    config.addinivalue_line("markers", "humanfix: a HumanEvalFix repair task (pytest-humanfix)")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths given: collect the tasks only, not the project's own tests.
        config.args = [str(config.invocation_params.dir)]
    settings = settle_agent(config, settings)
    if is_worker(config):
        from . import worker

        return worker.start(config, settings)
    from . import controller

    return controller.start(config, settings)
