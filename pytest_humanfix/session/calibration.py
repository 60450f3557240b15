"""Each task's execution limit, calibrated on the machine at hand.

A fixed wall-clock limit means one thing on an idle workstation and another on a CI runner
with eight workers on two cores. The limit of a task is max(--humanfix-timeout, k × the time
its canonical solution takes here), k being --humanfix-timeout-factor. The canonical solutions
are timed once, by the controller before any worker starts, and the times are kept in pytest's
cache under the dataset's hash and this machine (cpu count, platform, Python), so a later run
on the same machine reuses them.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Protocol

from ..dataset import Task
from ..sandbox.environment import Sandbox
from ..sandbox.program import build_program

CACHE_PREFIX = "humanfix/calibration/"


class Cache(Protocol):
    """What calibration uses of pytest's `config.cache`."""

    def get(self, key: str, default: object) -> object: ...

    def set(self, key: str, value: object) -> None: ...


def machine() -> str:
    return f"{os.cpu_count()} cpus, {platform.platform()}, Python {platform.python_version()}"


def measure(tasks: Sequence[Task], sandbox: Sandbox, timeout: float) -> dict[str, float]:
    """Seconds each canonical solution takes on its tests in the sandbox (the limit, if it
    does not finish within it)."""
    return {task.task_id: sandbox.run(build_program(task.canonical_code, task.test,
                                                    task.test_setup), timeout).seconds
            for task in tasks}


def calibrate(tasks: Sequence[Task], sandbox: Sandbox, cache: Cache | None, dataset_hash: str,
              timeout: float) -> dict[str, float]:
    """The canonical solution's seconds for each task, from the cache or measured now."""
    key = CACHE_PREFIX + dataset_hash
    stored = cache.get(key, {}) if cache is not None else {}
    by_machine = dict(stored) if isinstance(stored, dict) else {}
    here = dict(by_machine.get(machine()) or {})
    missing = [task for task in tasks if not isinstance(here.get(task.task_id), (int, float))]
    if missing:
        here.update(measure(missing, sandbox, timeout))
        if cache is not None:
            cache.set(key, {**by_machine, machine(): here})
    return {task.task_id: float(here[task.task_id]) for task in tasks}


def task_limit(timeout: float, factor: float, canonical_seconds: float | None) -> float:
    """The wall-clock limit of one task's executions."""
    if canonical_seconds is None:
        return timeout
    return round(max(timeout, factor * canonical_seconds), 3)
