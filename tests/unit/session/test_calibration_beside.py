"""Timing reference programs beside one another (session/calibration.py, `measure` with sandboxes
`beside` and `timing_beside`): each program timed once, as many at a time as the run has workers,
and a sandbox's failure the caller's."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from pytest_humanfix.dataset import Task
from pytest_humanfix.sandbox.environment import Limits, SandboxError, Verdict
from pytest_humanfix.sandbox.fresh import FreshSandbox
from pytest_humanfix.sandbox.layers import ProcessLayer
from pytest_humanfix.sandbox.warm import WarmSandbox
from pytest_humanfix.session import calibration
from pytest_humanfix.session.calibration import Reading, measure, timing_beside

NO_MEMORY_BOUND = SimpleNamespace(bounds_memory=False)  # what a warm executor asks of cgroups


@dataclass
class Timed:
    """Takes `seconds` a program; keeps the programs it ran and how many ran at once."""

    seconds: float = 0.05
    fails: bool = False
    programs: list[str] = field(default_factory=list)
    running: list[int] = field(default_factory=lambda: [0, 0])  # now, most
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        with self.lock:
            self.running[0] += 1
            self.running[1] = max(self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running[0] -= 1
            self.programs.append(program)
        if self.fails:
            raise SandboxError("the warm executor did not start")
        return Verdict(status="passed", exit_code=0, seconds=float(len(program)), stdout="",
                       stderr="", network="none", limit=timeout or 0.0)


def tasks(count: int) -> list[Task]:
    return [Task(task_id=f"Python/{n}", entry_point="f", bug_type="b", prompt="",
                 declaration="", buggy_solution="", canonical_solution="x" * n, test="")
            for n in range(count)]


# The program is the canonical solution itself, and its reading the program's length.
SOLUTION = Reading(program=lambda task: task.canonical_solution)


def test_each_program_is_timed_once_as_many_at_a_time_as_sandboxes():
    own, shared = Timed(), Timed()
    readings = measure(tasks(12), own, 10.0, SOLUTION, beside=[shared, shared])
    assert readings == {f"Python/{n}": float(n) for n in range(12)}  # in the tasks' order
    assert sorted(own.programs + shared.programs, key=len) == ["x" * n for n in range(12)]
    assert own.programs and shared.running[1] == 2  # three programs at a time in all
    alone = Timed()
    measure(tasks(3), alone, 10.0, SOLUTION)
    assert alone.running[1] == 1


def test_a_sandbox_that_fails_beside_fails_the_calibration():
    with pytest.raises(SandboxError, match="did not start"):
        measure(tasks(6), Timed(), 10.0, SOLUTION, beside=[Timed(fails=True)])


def test_as_many_at_a_time_as_workers_at_most_a_cpu_each(monkeypatch):
    monkeypatch.setattr(calibration.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    fresh = FreshSandbox(ProcessLayer(), Limits())
    assert timing_beside(fresh, 1) == []
    assert timing_beside(fresh, 3) == [fresh, fresh]  # one runs executions at once
    assert len(timing_beside(fresh, 16)) == 3
    warm = WarmSandbox(ProcessLayer(), Limits(), NO_MEMORY_BOUND)  # never started
    copies = timing_beside(warm, 2)
    assert len(copies) == 1 and copies[0] is not warm and isinstance(copies[0], WarmSandbox)
    for sandbox in [warm, *copies]:
        sandbox.shutdown()
