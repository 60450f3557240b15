"""The record of a task whose xdist worker died while running it (xdist reports a crash as phase
"???"): a harness error, counted and never scored, so the run goes on with a new worker
(docs/sandbox.md, "A worker that dies is not the end of its task")."""

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
