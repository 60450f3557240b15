"""A worker that dies in the middle of a task (a segfault in a native library, the OOM killer)
must not lose the task: pytest-xdist reports the crash on the controller, which records the task
as a harness error, so the JSONL and the summary count it and the run goes on."""

from __future__ import annotations

from typing import Any

import pytest

from .results import TaskResult


class CrashRecorder:
    """Registered on the xdist controller only, next to the `Controller` whose files it uses."""

    def __init__(self, controller: Any) -> None:
        self.controller = controller

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport,
                               sched: Any) -> None:
        runner = self.controller.runner
        task = next((t for t in runner.tasks if crashitem.endswith("::" + t.item_name)), None)
        if task is None:
            return
        gateway = getattr(getattr(report, "node", None), "gateway", None)
        worker = getattr(gateway, "id", "?")
        result = TaskResult(
            task_id=task.task_id, entry_point=task.entry_point, bug_type=task.bug_type,
            outcome="error",
            error=f"xdist worker {worker} died while running {task.task_id} (a crash in the "
                  "harness process itself, e.g. the OOM killer or a native library); the run "
                  "went on with a new worker")
        record = runner.record(result)
        record["worker"] = worker
        self.controller.writer.write(record)
        self.controller.records.append(record)
