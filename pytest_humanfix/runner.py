"""Per-process state of a humanfix run: settings, tasks, the model and the sandbox.

Each pytest process (the controller and every xdist worker) holds one Runner. Tasks are loaded
once, the model is loaded once and lazily, and a model that fails to load is remembered so that
every later task errors at once instead of retrying the load.
"""

from __future__ import annotations

import functools
import os
import time
import traceback
import uuid
from typing import Any

from .agent import repair
from .dataset import Task, content_hash, load_tasks, select
from .models import Model, ModelLoadError, load_model
from .results import Sample, TaskResult
from .sandbox import Limits, ProcessSandbox, SandboxError
from .settings import Settings


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


class Runner:
    def __init__(self, settings: Settings, run_id: str) -> None:
        self.settings = settings
        self.run_id = run_id
        self._model: Model | None = None
        self._model_error: str | None = None
        # --humanfix-resume: finished records by task id, decided by the controller.
        self.resumed: dict[str, dict[str, Any]] = {}

    @functools.cached_property
    def all_tasks(self) -> list[Task]:
        return load_tasks(self.settings.dataset)

    @functools.cached_property
    def tasks(self) -> list[Task]:
        return select(self.all_tasks, self.settings.max, self.settings.task)

    @functools.cached_property
    def dataset_hash(self) -> str:
        return content_hash(self.all_tasks)

    @functools.cached_property
    def sandbox(self) -> ProcessSandbox:
        return ProcessSandbox(Limits(timeout=self.settings.timeout))

    @property
    def protocol(self) -> dict[str, Any]:
        return self.settings.protocol

    def model(self) -> Model:
        if self._model_error is not None:
            raise ModelLoadError(self._model_error)
        if self._model is None:
            try:
                self._model = load_model(self.settings.model)
            except Exception as exc:
                self._model_error = f"model {self.settings.model!r} failed to load: " \
                                    f"{type(exc).__name__}: {exc}"
                raise ModelLoadError(self._model_error) from exc
        return self._model

    def evaluate(self, task: Task) -> TaskResult:
        """All --humanfix-samples attempts at the task. The first sample's outcome is the
        item's outcome; pass@k is computed from the counts over every sample."""
        first = self.evaluate_once(task)
        if self.settings.samples == 1 or first.outcome == "error":
            return first
        results = [first]
        while len(results) < self.settings.samples and results[-1].outcome != "error":
            results.append(self.evaluate_once(task))
        return combine_samples(results)

    def evaluate_once(self, task: Task) -> TaskResult:
        started = time.monotonic()
        try:
            return repair(task, self.model(), self.sandbox)
        except (ModelLoadError, SandboxError) as exc:
            error = str(exc)
        except Exception as exc:  # a harness bug must not pass for "not fixed"
            error = "".join(traceback.format_exception_only(exc)).strip()
            error += "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:])
        return TaskResult(task_id=task.task_id, entry_point=task.entry_point,
                          bug_type=task.bug_type, outcome="error", error=error,
                          seconds=round(time.monotonic() - started, 4))

    def record(self, result: TaskResult) -> dict[str, Any]:
        """The JSONL line for one task: the result plus what identifies the run."""
        return {
            "run_id": self.run_id,
            "model": self.settings.model,
            **result.to_dict(),
            "protocol": self.protocol,
            "dataset": self.settings.dataset,
            "dataset_hash": self.dataset_hash,
            "sandbox": self.sandbox.layer if "sandbox" in self.__dict__ else None,
            "worker": worker_id(),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }


def combine_samples(results: list[TaskResult]) -> TaskResult:
    """One task result from several samples: the first sample's details, every sample's
    outcome. A harness error in any sample makes the task an error (it is not scored)."""
    first = results[0]
    failed = next((r for r in results if r.outcome == "error"), None)
    return TaskResult(
        task_id=first.task_id, entry_point=first.entry_point, bug_type=first.bug_type,
        outcome="error" if failed else first.outcome, code=first.code, diff=first.diff,
        verdict=first.verdict, failure=first.failure,
        error=f"sample {results.index(failed) + 1}: {failed.error}" if failed else "",
        attempts=first.attempts, seconds=round(sum(r.seconds for r in results), 4),
        samples=[Sample.of(r) for r in results])
