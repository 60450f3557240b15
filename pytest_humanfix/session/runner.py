"""Per-process state of a humanfix run: settings, tasks, the model and the sandbox.

Each pytest process (the controller and every xdist worker) holds one Runner. Tasks are loaded
once, the model is loaded once and lazily, and a model that fails to load is remembered so that
every later task errors at once instead of retrying the load.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agent.graph import repair, repair_graph
from ..dataset import DatasetError, Task, content_hash, deal, ids_hash, load_tasks, select
from ..models.base import Model, ModelLoadError
from ..models.specs import CONTROLS, load_model
from ..records import Sample, TaskResult
from ..sandbox.choose import Choice, make_sandbox
from ..sandbox.environment import Limits, Sandbox, SandboxError
from ..sandbox.rerun import TaskSandbox
from ..settings import Settings
from .calibration import task_limit
from .repeat import repeat_check, repeated


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def choose_sandbox(settings: Settings, start: bool = True) -> Choice:
    """The layer and executor for this process, probed once; SandboxError if the ones asked for
    explicitly cannot work here. Without `start`, a warm executor starts when first used."""
    return make_sandbox(settings.sandbox, settings.executor, Limits(timeout=settings.timeout),
                        hidden_files=(settings.dataset,), start=start)


@dataclass(frozen=True)
class Workload:
    """The dataset's tasks, the ones this process runs (the selection, or under
    --humanfix-shard its shard), the hash that identifies the dataset, and the shard as every
    record carries it (None without one)."""

    all_tasks: list[Task]
    tasks: list[Task]
    dataset_hash: str
    shard: dict[str, Any] | None = None

    @classmethod
    def load(cls, settings: Settings) -> Workload:
        all_tasks = load_tasks(settings.dataset)
        selected = select(all_tasks, settings.max, settings.task)
        if settings.shard is None:
            return cls(all_tasks, selected, content_hash(all_tasks))
        index, count = settings.shard
        if count > len(selected):
            raise DatasetError(f"--humanfix-shard {index}/{count}: the selection has only "
                               f"{len(selected)} task(s); use at most {len(selected)} shards.")
        tasks = deal(selected, index, count)
        # The shard's own task ids let a merge name a task a shard did not finish.
        shard = {"index": index, "count": count, "tasks": [t.task_id for t in tasks],
                 "selected": len(selected),
                 "selection": ids_hash(t.task_id for t in selected)}
        return cls(all_tasks, tasks, content_hash(all_tasks), shard)


def worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


class Runner:
    """Built complete by its role (`controller.start`, `worker.start`): what the role decided is
    passed in, never set afterwards. The dataset and the sandbox, when not passed, are loaded
    on first use (tests build bare runners)."""

    def __init__(self, settings: Settings, run_id: str, *, workload: Workload | None = None,
                 sandbox_choice: Choice | None = None, device: str | None = None,
                 endpoint: dict[str, str] | None = None,
                 resumed: dict[str, dict[str, Any]] | None = None,
                 canonical_seconds: dict[str, float] | None = None) -> None:
        self.settings = settings
        self.run_id = run_id
        # Given ones stand in for the cached properties below.
        if workload is not None:
            self.__dict__["workload"] = workload
        if sandbox_choice is not None:
            self.__dict__["sandbox_choice"] = sandbox_choice
        # The GPU this process was pinned to (a CUDA_VISIBLE_DEVICES entry), None if none.
        self.device = device
        # Under --humanfix-serve: {"base_url", "model", "engine"} of the shared engine
        # answering instead.
        self.endpoint = endpoint
        # --humanfix-resume: finished records by task id, decided by the controller.
        self.resumed: dict[str, dict[str, Any]] = resumed or {}
        # The canonical solution's seconds per task on this machine (session/calibration),
        # timed by the controller; a task without one runs under --humanfix-timeout.
        self.canonical_seconds: dict[str, float] = canonical_seconds or {}
        self._model: Model | None = None
        self._model_error: str | None = None
        self._repeat_model: Model | None = None
        self._repeat_error: str | None = None
        self._load_error_unreported = False

    @functools.cached_property
    def workload(self) -> Workload:
        return Workload.load(self.settings)

    @property
    def tasks(self) -> list[Task]:
        return self.workload.tasks

    @property
    def dataset_hash(self) -> str:
        return self.workload.dataset_hash

    @functools.cached_property
    def sandbox_choice(self) -> Choice:
        return choose_sandbox(self.settings)

    @property
    def sandbox(self) -> Sandbox:
        return self.sandbox_choice.sandbox

    @property
    def protocol(self) -> dict[str, Any]:
        return self.settings.protocol

    @property
    def uses_langgraph(self) -> bool:
        """The controls' replies are known: their agent walks the graph as plain calls, and the
        process never imports LangGraph."""
        return self.settings.model not in CONTROLS

    def model(self) -> Model:
        if self._model_error is not None:
            if self._load_error_unreported:  # the load failed in `preload`, before any task
                self._load_error_unreported = False
                raise ModelLoadError(self._model_error)
            # Every later task errors at once, and still says why.
            raise ModelLoadError(f"{self._model_error} (not retried: it failed earlier in "
                                 "this process)")
        if self._model is None:
            try:
                self._model = self._load_model()
            except Exception as exc:
                reason = str(exc) if isinstance(exc, ModelLoadError) else \
                    f"{type(exc).__name__}: {exc}"
                self._model_error = f"model {self.settings.model!r} failed to load: {reason}"
                raise ModelLoadError(self._model_error) from exc
        return self._model

    def _load_model(self) -> Model:
        if self.endpoint is None:
            return load_model(self.settings.model or "", self.settings)
        # The engine's name labels every reply it serves.
        return load_model("openai:" + self.endpoint["model"], dataclasses.replace(
            self.settings, base_url=self.endpoint["base_url"],
            engine=self.endpoint.get("engine", "openai")))

    def preload(self) -> None:
        """Do the one-off work of a process before its first task's timer starts: load the
        model, probe the sandbox, build the agent's graph. Whatever fails here fails again in
        `evaluate`, which makes it that task's error outcome; so it is not reported twice."""
        if self._model is None and self._model_error is None:
            try:
                self.model()
            except ModelLoadError:
                self._load_error_unreported = True
        warm_ups: list[Callable[[], object]] = [lambda: self.sandbox]
        if self.uses_langgraph:
            warm_ups.append(repair_graph)
        for warm_up in warm_ups:
            try:
                warm_up()
            except Exception:
                pass

    def evaluate(self, task: Task) -> TaskResult:
        """All --humanfix-samples attempts at the task. The first sample's outcome is the
        item's outcome; pass@k is computed from the counts over every sample."""
        first = self.evaluate_once(task)
        result = first
        if self.settings.samples > 1 and first.outcome != "error":
            results = [first]
            while len(results) < self.settings.samples and results[-1].outcome != "error":
                results.append(self.evaluate_once(task))
            result = combine_samples(results)
        if self.settings.repeat_check and task.task_id in self.repeated \
                and first.outcome != "error":
            result.repeat_check = self.repeat(task, first)
        return result

    @functools.cached_property
    def repeated(self) -> frozenset[str]:
        """The tasks whose first attempt --humanfix-repeat-check generates again."""
        return repeated(self.tasks, self.settings)

    def repeat(self, task: Task, first: TaskResult) -> dict[str, Any]:
        """The task's repeat check, by --humanfix-repeat-with's model or the run's own."""
        spec = self.settings.repeat_with
        if spec and self._repeat_model is None and self._repeat_error is None:
            try:
                self._repeat_model = load_model(spec, self.settings)
            except Exception as exc:  # it fails only the repeat checks, once per process
                self._repeat_error = (f"--humanfix-repeat-with {spec!r} failed to load: "
                                      f"{type(exc).__name__}: {exc}")
        if self._repeat_error is not None:
            return {"error": self._repeat_error}
        model = self._repeat_model or self.model()
        sandbox = TaskSandbox(self.sandbox, self.limit_for(task.task_id))
        return repeat_check(task, first, model, sandbox, self.settings,
                            langgraph=self.uses_langgraph)

    def limit_for(self, task_id: str) -> float:
        """The wall-clock limit of the task's executions."""
        return task_limit(self.settings.timeout, self.settings.timeout_factor,
                          self.canonical_seconds.get(task_id))

    def evaluate_once(self, task: Task) -> TaskResult:
        started = time.monotonic()
        try:
            sandbox = TaskSandbox(self.sandbox, self.limit_for(task.task_id))
            return repair(task, self.model(), sandbox, self.settings,
                          langgraph=self.uses_langgraph)
        except (ModelLoadError, SandboxError) as exc:
            error = str(exc)
        except Exception as exc:  # a harness bug must not pass for "not fixed"
            error = "".join(traceback.format_exception_only(exc)).strip()
            error += "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:])
        return TaskResult.error_for(task, error, time.monotonic() - started)

    def close(self) -> None:
        """Stop what this process started for the run (the warm executor's server)."""
        if "sandbox_choice" in self.__dict__:
            self.sandbox.shutdown()

    def record(self, result: TaskResult) -> dict[str, Any]:
        """The JSONL line for one task: the result plus what identifies the run."""
        return {
            "run_id": self.run_id,
            "model": self.settings.model,
            **result.to_dict(),
            "protocol": self.protocol,
            "dataset": self.settings.dataset,
            "dataset_hash": self.dataset_hash,
            "shard": self.workload.shard,
            "sandbox": self.sandbox.layer.name if "sandbox_choice" in self.__dict__ else None,
            "worker": worker_id(),
            "device": self.device,
            # Which limit applied: the calibrated one, and what it was calibrated from.
            "time_limit": {"seconds": self.limit_for(result.task_id),
                           "canonical_seconds": self.canonical_seconds.get(result.task_id),
                           "factor": self.settings.timeout_factor,
                           "floor": self.settings.timeout},
            "model_error": self._model_error,
            # A fleet's servers this process took out of rotation so far, and why.
            "servers_out": getattr(self._model, "servers_out", []),
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
        samples=[Sample.of(r) for r in results], flags=first.flags)
