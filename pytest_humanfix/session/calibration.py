"""Each task's execution limits, calibrated on the machine at hand as EvalPlus sets its own:
K × its reference solution's time here, at least a floor and at most the cap (--humanfix-timeout,
BigCode's limit by default), and a larger one for the run after a first timeout (`TaskLimit`).
The times are measured once by the controller, in every language, and kept per user and machine
outside pytest's cache (docs/trust.md, "Timeouts that hold under load"). What is kept of a run
is a `Reading`: the program's seconds, or for HumanEval+ the reference's seconds on each input
as well (`plus.reference_times`).
"""

from __future__ import annotations

import json
import os
import platform
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..atomic import write_atomically
from ..dataset import Task
from ..languages import LANGUAGES
from ..records import TimeLimit
from ..sandbox.choose import Choice
from ..sandbox.environment import Job, Layer, Sandbox, Verdict
from ..sandbox.rerun import rerun_limit
from ..sandbox.warm import WarmSandbox
from ..settings import Settings, user_cache_dir


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


def reference_code(task: Task) -> str:
    """BigCode's reference solution as the canonical control answers it (models/controls):
    declaration and body in Python; elsewhere the prompt and body, since some declarations
    lack the prompt's helpers and imports (Go/10's IsPalindrome)."""
    if task.language == "python":
        return task.canonical_code
    return task.prompt + task.canonical_solution


def reference_program(task: Task) -> Job:
    """The program of the task's reference solution and hidden tests, in its language."""
    return LANGUAGES[task.language].job(reference_code(task), task.test, task)


def is_seconds(value: object) -> bool:
    return isinstance(value, (int, float))


@dataclass(frozen=True)
class Reading:
    """What calibration runs for a task and keeps of its verdict (plain JSON, for the cache and
    the workers), and which cached values are such readings: any other is measured again."""

    program: Callable[[Task], Job] = reference_program
    of: Callable[[Verdict], Any] = lambda verdict: verdict.seconds
    valid: Callable[[object], bool] = is_seconds


SECONDS = Reading()


class BuiltOnFirstRun:
    """A sandbox made only when a program first runs in it, and shut down with it: a
    toolchain's caches take seconds to build, and a calibration read from the cache runs
    nothing."""

    def __init__(self, build: Callable[[], Sandbox]) -> None:
        self.build = build
        self.built: Sandbox | None = None

    @property
    def layer(self) -> Layer:
        return self.sandbox().layer

    def sandbox(self) -> Sandbox:
        if self.built is None:
            self.built = self.build()
        return self.built

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        return self.sandbox().run(job, timeout)

    def shutdown(self) -> None:
        if self.built is not None:
            self.built.shutdown()


def measure(tasks: Sequence[Task], sandbox: Sandbox, timeout: float,
            reading: Reading = SECONDS, beside: Sequence[Sandbox] = ()) -> dict[str, Any]:
    """The reading of each reference program (by default the seconds the reference solution
    takes on its tests) in the sandbox (the limit, if it does not finish within it); with
    sandboxes `beside` it, as many programs at a time, each sandbox running one after
    another, taking the next task left."""
    left: queue.SimpleQueue[Task] = queue.SimpleQueue()
    for task in tasks:
        left.put(task)
    readings: dict[str, Any] = {}
    failed: list[BaseException] = []

    def take(box: Sandbox) -> None:
        try:
            while not failed:
                task = left.get_nowait()
                readings[task.task_id] = reading.of(box.run(reading.program(task), timeout))
        except queue.Empty:
            return
        except BaseException as exc:  # raised in the caller's thread below
            failed.append(exc)

    threads = [threading.Thread(target=take, args=(box,), name=f"humanfix-calibrate-{n}")
               for n, box in enumerate(beside, 1)]
    for thread in threads:
        thread.start()
    take(sandbox)
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
    return {task.task_id: readings[task.task_id] for task in tasks}


def calibrate(tasks: Sequence[Task], sandbox: Sandbox, cache: Cache, timeout: float,
              anew: bool = False, reading: Reading = SECONDS,
              beside: Sequence[Sandbox] = ()) -> dict[str, Any]:
    """Each task's reading (by default the reference solution's seconds), from the cache or
    measured now (all of them when `anew`), with `beside` as `measure` takes it."""
    by_machine = cache.load()
    kept = by_machine.get(machine())
    here = dict(kept) if isinstance(kept, dict) and not anew else {}
    missing = [task for task in tasks if not reading.valid(here.get(task.task_id))]
    if missing:
        here.update(measure(missing, sandbox, timeout, reading, beside))
        cache.store({**by_machine, machine(): here})
    return {task.task_id: here[task.task_id] for task in tasks}


def timing_beside(sandbox: Sandbox, workers: int) -> list[Sandbox]:
    """The sandboxes that time reference programs beside the controller's own, one fewer than
    the run's workers (at most one a CPU): the programs are timed under the load of as many
    executions at once as the workers will run, in 1/N of the time alone (docs/benchmarks.md,
    "Workers ready at once"). A fresh interpreter's sandbox
    runs executions at once; a warm executor runs one at a time: a copy each, which the caller
    shuts down."""
    count = min(workers, len(os.sched_getaffinity(0))) - 1
    if isinstance(sandbox, WarmSandbox):
        return [WarmSandbox(sandbox.layer, sandbox.limits, sandbox.cgroups, sandbox.python)
                for _ in range(count)]
    return [sandbox] * count


def calibrate_language(choice: Choice, settings: Settings, tasks: Sequence[Task], cache: Cache,
                       anew: bool = False, beside: Sequence[Sandbox] = ()) -> dict[str, float]:
    """The reference solutions' seconds of one language's tasks, from the cache, or timed in
    the sandbox a worker runs them in (a toolchain's caches built first, only where one is
    timed). Each is allowed at least BigCode's limit, so a low --humanfix-timeout still
    measures; where the toolchain is missing none is timed, and the tasks run under the cap
    (their executions fail naming what to install). Python's are timed `beside` the
    controller's own sandbox."""
    language = LANGUAGES[tasks[0].language]
    limit = max(settings.timeout_for(language.name), language.timeout)
    if language.name == "python":
        return calibrate(tasks, choice.sandbox, cache, limit, anew=anew, beside=beside)
    if language.missing():
        return {}
    toolchain = BuiltOnFirstRun(lambda: choice.for_toolchain(language, limit))
    try:
        return calibrate(tasks, toolchain, cache, limit, anew=anew)
    finally:
        toolchain.shutdown()


@dataclass(frozen=True)
class TaskLimit:
    """One task's wall-clock limits: its executions' (`seconds`) and a re-run's after a first
    timeout (`rerun_seconds`), and what they were set from."""

    seconds: float
    rerun_seconds: float
    reference_seconds: float | None
    factor: float
    floor: float
    cap: float

    def to_json(self) -> TimeLimit:
        """The record's `time_limit` (docs/schema.md)."""
        return TimeLimit(seconds=self.seconds, rerun_seconds=self.rerun_seconds,
                         canonical_seconds=self.reference_seconds, factor=self.factor,
                         floor=self.floor, cap=self.cap)


def task_limit(reference_seconds: float | None, factor: float, floor: float,
               cap: float) -> TaskLimit:
    """min(cap, max(floor, factor × the reference's seconds)); the cap where the reference was
    not timed (BigCode's limit, unless --humanfix-timeout lowers it). The defaults of the floor
    and the factor come from the references' times measured again and again, quiet and
    loaded: docs/trust.md, "Timeouts that hold under load"."""
    seconds = cap if reference_seconds is None else \
        round(min(cap, max(floor, factor * reference_seconds)), 3)
    return TaskLimit(seconds, rerun_limit(seconds, cap), reference_seconds, factor, floor, cap)


def limit_under(settings: Settings, language: str,
                reference_seconds: float | None) -> TaskLimit:
    """The limits of a task of `language` under the run's options."""
    return task_limit(reference_seconds, settings.timeout_factor, settings.timeout_floor,
                      settings.timeout_for(language))
