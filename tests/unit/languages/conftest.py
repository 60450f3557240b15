"""What the drivers' tests share: the tasks of the module's `LANGUAGE` and a sandbox of it
(test_languages.py has its own `tasks`, of every language)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import language
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox


@pytest.fixture(scope="module")
def tasks(request: pytest.FixtureRequest, dataset: Path) -> list[Task]:
    return load_tasks(str(dataset.parent / f"humanevalpack-{request.module.LANGUAGE}.jsonl"))


@pytest.fixture(scope="module")
def sandbox(request: pytest.FixtureRequest):
    chosen = language(request.module.LANGUAGE)
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    made = ToolchainSandbox(layer, chosen, Limits(timeout=chosen.timeout), cgroups)
    yield made
    made.shutdown()
