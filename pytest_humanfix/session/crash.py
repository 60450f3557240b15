"""A worker that dies in the middle of a task (the OOM killer, a segfault in a native library, a
pytest-timeout 'thread' timeout) must not lose the task: xdist reports the crash to the
controller as a report of phase "???", and the controller records the task as a harness error,
so the JSONL and the summary count it and the run goes on with a new worker."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..records import Record, TaskResult

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
              "killer, a native library, or a pytest-timeout 'thread' timeout. The task is not "
              "scored; the run went on with a new worker."))
    if worker:
        record["worker"] = worker
    return record
