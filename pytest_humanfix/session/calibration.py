"""Each task's execution limit, calibrated on the machine at hand: max(--humanfix-timeout,
k × its canonical solution's time here), the times measured once by the controller and kept per
user and machine outside pytest's cache (docs/trust.md, "Timeouts that hold under load"). What
is kept of a run is a `Reading`: the program's seconds, or for HumanEval+ the reference's
seconds on each input as well (`plus.reference_times`).
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..atomic import write_atomically
from ..dataset import Task
from ..sandbox.environment import Sandbox, Verdict
from ..sandbox.program import build_program
from ..settings import user_cache_dir


class Cache(Protocol):
    """Where calibration keeps the times of one dataset: a mapping from machine to times."""

    def load(self) -> dict[str, object]: ...

    def store(self, times: dict[str, object]) -> None: ...


class CalibrationFile:
    """The times of one dataset in one JSON file, replaced whole by a rename so that two runs
    finishing together, or one killed while writing, never leave a torn file behind."""

    def __init__(self, dataset_hash: str, folder: Path | None = None) -> None:
        self.path = (folder or user_cache_dir("calibration")) / f"{dataset_hash}.json"

    def load(self) -> dict[str, object]:
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}  # none yet, or unreadable: measured again and written anew
        return stored if isinstance(stored, dict) else {}

    def store(self, times: dict[str, object]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps(times))
        except OSError:
            pass  # a read-only home costs the next run this measurement, nothing more


def machine() -> str:
    return f"{os.cpu_count()} cpus, {platform.platform()}, Python {platform.python_version()}"


def canonical_program(task: Task) -> str:
    return build_program(task.canonical_code, task.test, task.test_setup)


def is_seconds(value: object) -> bool:
    return isinstance(value, (int, float))


@dataclass(frozen=True)
class Reading:
    """What calibration runs for a task and keeps of its verdict (plain JSON, for the cache and
    the workers), and which cached values are such readings: any other is measured again."""

    program: Callable[[Task], str] = canonical_program
    of: Callable[[Verdict], Any] = lambda verdict: verdict.seconds
    valid: Callable[[object], bool] = is_seconds


SECONDS = Reading()


def measure(tasks: Sequence[Task], sandbox: Sandbox, timeout: float,
            reading: Reading = SECONDS) -> dict[str, Any]:
    """The reading of each reference program (by default the seconds the canonical solution
    takes on its tests) in the sandbox (the limit, if it does not finish within it)."""
    return {task.task_id: reading.of(sandbox.run(reading.program(task), timeout))
            for task in tasks}


def calibrate(tasks: Sequence[Task], sandbox: Sandbox, cache: Cache, timeout: float,
              anew: bool = False, reading: Reading = SECONDS) -> dict[str, Any]:
    """Each task's reading (by default the canonical solution's seconds), from the cache or
    measured now (all of them when `anew`)."""
    by_machine = cache.load()
    kept = by_machine.get(machine())
    here = dict(kept) if isinstance(kept, dict) and not anew else {}
    missing = [task for task in tasks if not reading.valid(here.get(task.task_id))]
    if missing:
        here.update(measure(missing, sandbox, timeout, reading))
        cache.store({**by_machine, machine(): here})
    return {task.task_id: here[task.task_id] for task in tasks}


def task_limit(timeout: float, factor: float, canonical_seconds: float | None) -> float:
    """The wall-clock limit of one task's executions."""
    if canonical_seconds is None:
        return timeout
    return round(max(timeout, factor * canonical_seconds), 3)
