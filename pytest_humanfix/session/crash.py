"""A task whose xdist worker died while running it (xdist reports a crash as phase "???"): a
harness error, so the run goes on with a new worker, and the task runs once more on another one
(`Crashes`, through xdist's pytest_handlecrashitem); a second crash stands, scored not fixed
(docs/sandbox.md, "A worker that dies is not the end of its task")."""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

import pytest

from ..records import Record, TaskResult, earlier_run

if TYPE_CHECKING:
    from .runner import Runner


def crashed_record(runner: Runner, nodeid: str, report: pytest.TestReport
                   ) -> Record | None:
    name = nodeid.rsplit("::", 1)[-1]
    task = next((t for t in runner.tasks if t.item_name == name), None)
    if task is None:
        return None
    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
    record = runner.record(TaskResult.error_for(
        task, f"the xdist worker running this task died while running {task.task_id} "
              f"({report.longrepr}): a crash of the harness process itself, e.g. the OOM "
              "killer, a native library, or a pytest-timeout 'thread' timeout. The run went on "
              "with a new worker, the task once more unless this was its retry; a task still in "
              "error is scored not fixed."))
    if worker:
        record["worker"] = worker
    return record


class Crashes:
    """The controller's plugin (under xdist) that runs a crashed task once more: the crash's
    record, by node id, becomes the retry's `first_try`."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.first_tries: dict[str, Record] = {}

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport,
                               sched: Any) -> None:
        """Puts the task back in xdist's queue, unless another plugin (pytest-rerunfailures)
        runs it again already, it is its retry that crashed, or the scheduler cannot
        (`--dist loadscope`, `each`): then the crash stands."""
        if report.outcome == "rerun" or crashitem in self.first_tries:
            return
        record = crashed_record(self.runner, crashitem, report)
        if record is None:
            return
        try:
            sched.mark_test_pending(crashitem)
        except NotImplementedError:
            return
        self.first_tries[crashitem] = record
        report.outcome = "rerun"  # type: ignore[assignment]

    def retrying(self, report: pytest.TestReport) -> bool:
        """The crash report of a task put back in the queue: its retry reports the task."""
        return report.outcome == "rerun" and report.nodeid in self.first_tries

    def standing(self, report: pytest.TestReport) -> Record | None:
        """The record of a crash that stands (None: the task is retried, or of no task)."""
        return None if self.retrying(report) else \
            crashed_record(self.runner, report.nodeid, report)

    def pytest_report_teststatus(self, report: pytest.TestReport
                                 ) -> tuple[str, str, str] | None:
        return ("rerun", "R", "RERUN") if report.when == "???" and self.retrying(report) \
            else None

    def with_first_try(self, nodeid: str, record: Record) -> Record:
        """The task's record, holding its crash as `first_try` where it was retried."""
        crash = self.first_tries.get(nodeid)
        return record if crash is None else {**record, "first_try": earlier_run(crash)}

    def never_retried(self, collected: Container[str]) -> list[Record]:
        """The crashes whose retry never ran (xdist gave up its workers), not yet collected:
        each stands as its task's record."""
        return [record for record in self.first_tries.values()
                if record["task_id"] not in collected]
