"""The per-process Runner of a humanfix run: settings, the run's state (session/state), tasks,
the model and the sandbox, and the record each task becomes. The model is loaded once and
lazily; one that fails to load is remembered, so every later task errors at once
(docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from typing import cast

from ..agent.config import RepairConfig
from ..agent.contract import run_agent
from ..agent.graph import first_ask, repair, repair_graph
from ..agent.loader import agent_name
from ..agent.routing import GRAPHS
from ..agent.syntax import available as syntax_available
from ..computed_by import ComputedBy
from ..dataset import Task
from ..jsonl import storable
from ..languages import LANGUAGES
from ..models.base import Model, ModelLoadError
from ..models.engines.launch import Endpoint
from ..models.generation import GenerationConfig
from ..models.specs import CONTROLS, load_model, resolve_spec
from ..plus.known import PLUS_KNOWN_FAILURES
from ..plus.limits import GT_TIME_LIMIT_FACTOR, MIN_TIME_LIMIT, input_limits, program_limit
from ..plus.verdicts import InputLimits
from ..protocol import RecordedProtocol, RunProtocol
from ..records import (
    InputTimeLimits,
    PlusTimeLimit,
    Record,
    RepeatCheck,
    TaskResult,
    earlier_run,
)
from ..sandbox.choose import Choice, Start, make_sandbox
from ..sandbox.environment import Limits, Sandbox, SandboxError, Verdict
from ..sandbox.rerun import TaskSandbox, rerun_limit
from ..settings import Settings
from .ahead import AskAhead, Handover
from .calibration import TaskLimit, limit_under
from .imports import unrewritten
from .repeat import repeat_check, repeated
from .samples import sampled
from .state import RunState
from .timeouts import OffClock
from .workload import Workload


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def choose_sandbox(settings: Settings, workload: Workload, start: Start = "wait") -> Choice:
    """The layer and executor for this process, probed once; SandboxError if the ones asked for
    explicitly cannot work here. A run without Python tasks starts no warm executor; `start`
    says when one does (`sandbox.choose.Start`)."""
    executor = settings.executor if "python" in workload.languages else "fresh"
    return make_sandbox(settings.sandbox, executor, Limits(timeout=settings.timeout_for("python")),
                        hidden=answer_paths(settings, workload), start=start)


def answer_paths(settings: Settings, workload: Workload) -> tuple[str, ...]:
    """What holds answers a candidate must not read: the run's data files (their folders go
    whole in bwrap), its report folder and results, the baseline's and the recorded replies."""
    replay = settings.model.removeprefix("replay:") \
        if settings.model and settings.model.startswith("replay:") else None
    paths = [*workload.files, settings.report_dir, str(settings.jsonl_path), settings.baseline,
             replay]
    return tuple(dict.fromkeys(p for p in paths if p))


def finished_at() -> str:
    """Now, as a record's `finished_at` says it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


class Runner:
    """Built complete by its role (`controller.start`, `worker.start`): what the role decided is
    passed in, never set afterwards. The dataset and the sandbox, when not passed, are loaded
    on first use (tests build bare runners)."""

    def __init__(self, settings: Settings, state: RunState, *, workload: Workload | None = None,
                 sandbox_choice: Choice | None = None, device: str | None = None,
                 endpoint: Endpoint | None = None) -> None:
        self.settings = settings
        self.state = state
        # Given ones stand in for the cached properties below.
        if workload is not None:
            self.__dict__["workload"] = workload
        if sandbox_choice is not None:
            self.__dict__["sandbox_choice"] = sandbox_choice
        # The GPU this process was pinned to (a CUDA_VISIBLE_DEVICES entry), None if none.
        self.device = device
        # Under --humanfix-serve: the shared engine answering instead.
        self.endpoint = endpoint
        self._toolchains: dict[str, Sandbox] = {}
        self._model: Model | None = None
        self._model_error: str | None = None
        self._repeat_model: Model | None = None
        self._repeat_error: str | None = None
        self._load_error_unreported = False
        self._ahead: AskAhead | None = None

    @functools.cached_property
    def workload(self) -> Workload:
        return Workload.load(self.settings)

    @property
    def tasks(self) -> list[Task]:
        return self.workload.tasks

    @functools.cached_property
    def sandbox_choice(self) -> Choice:
        return choose_sandbox(self.settings, self.workload)

    @property
    def sandbox(self) -> Sandbox:
        return self.sandbox_choice.sandbox

    def sandbox_for(self, language: str) -> Sandbox:
        """Python's executor, or the language's toolchain in the same layer and cgroups; a
        missing toolchain is a SandboxError naming the packages to install."""
        if language == "python":
            return self.sandbox
        if language not in self._toolchains:
            missing = LANGUAGES[language].missing()
            if missing:
                raise SandboxError(f"the {language} toolchain is missing: "
                                   + "; ".join(missing))
            self._toolchains[language] = self.sandbox_choice.for_toolchain(
                LANGUAGES[language], self.settings.timeout_for(language))
        return self._toolchains[language]

    def language_notes(self) -> list[str]:
        """Which of the run's languages can run here, and what the others lack."""
        lines = []
        for language in self.workload.languages:
            missing = LANGUAGES[language].missing()
            limit = (f"limits {self.settings.timeout_factor:g} × each reference's time, "
                     f"{self.settings.timeout_floor:g} s to {self.settings.timeout_for(language):g}"
                     " s")
            if language != "python":
                limit += (", tree-sitter check before execution and flags read from the "
                          "syntax tree" if syntax_available(language)
                          else ", no tree-sitter grammar: the compiler alone checks and the "
                          "flags read the text as written")
            lines.append(f"language {language}: " + (
                f"cannot run: {'; '.join(missing)}" if missing else f"runs here ({limit})"))
        return lines

    @property
    def protocol(self) -> RecordedProtocol:
        return RunProtocol.of_run(self.settings, self.workload.languages)

    @property
    def uses_langgraph(self) -> bool:
        """The controls' replies are known: their agent walks the graph as plain calls, and the
        process never imports LangGraph (a brought agent imports what it needs itself)."""
        return self.settings.model not in CONTROLS and self.settings.agent in GRAPHS

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

    def generation_config(self) -> GenerationConfig:
        """What a backend takes of the settings, and the servers as the controller found them."""
        return dataclasses.replace(GenerationConfig.of(self.settings), probed=self.state.servers)

    def _load_model(self) -> Model:
        if self.endpoint is None:
            return load_model(self.settings.model or "", self.generation_config())
        # The engine's name labels every reply it serves.
        model = load_model("openai:" + self.endpoint["model"], dataclasses.replace(
            self.generation_config(), base_urls=(self.endpoint["base_url"],),
            engine=self.endpoint["engine"]))
        # What the controller knows of the engine it started and the engine cannot say.
        model.computed_by.update(self.endpoint.get("computed_by") or ComputedBy())
        return model

    def preload(self, ahead: Callable[[], Sequence[Task]] = list) -> None:
        """Do the one-off work of a process before its first task's timer starts: load the
        model, send the first requests of the tasks `ahead` (`ask_ahead`), probe the sandbox,
        build the agent's graph (the engine answers meanwhile). Whatever fails here fails again
        in `evaluate`, which makes it that task's error outcome; so it is not reported twice."""
        with unrewritten():
            if self.settings.model and self._model is None and self._model_error is None:
                try:
                    self.model()
                except ModelLoadError:
                    self._load_error_unreported = True
            self.ask_ahead(ahead())
            warm_ups: list[Callable[[], object]] = [self.sandbox_choice.ready]
            # A toolchain's caches are built here, not in the first task's time.
            warm_ups += [functools.partial(self.sandbox_for, language)
                         for language in dict.fromkeys(task.language for task in self.tasks)]
            if self.uses_langgraph:
                warm_ups.append(functools.partial(repair_graph, self.settings.agent))
            for warm_up in warm_ups:
                try:
                    warm_up()
                except Exception:
                    pass

    @property
    def asks_ahead(self) -> bool:
        """Whether this process sends its next tasks' first requests ahead: to an
        OpenAI-compatible server (a model in this process answers one request at a time, and
        would only take the CPU from the task at hand), once the model is loaded."""
        served = self.endpoint is not None or (
            self.settings.model is not None and resolve_spec(self.settings.model).kind == "openai")
        return self.settings.ask_ahead > 0 and served and self._model is not None

    def ask_ahead(self, tasks: Sequence[Task]) -> None:
        """Sends the first requests of `tasks`, the built-in agent's task at hand and those
        this process runs after it, in order, within --humanfix-ask-ahead (session/ahead.py);
        a task --humanfix-resume reports without running is not asked. What was asked for a
        task no longer ahead (taken by another worker) is dropped."""
        if not tasks or not self.asks_ahead or self._model is None:
            return
        if self._ahead is None:
            self._ahead = AskAhead(self._model, self.settings.ask_ahead)
        config, prompt = RepairConfig.of(self.settings), self._model.prompt
        self._ahead.keep({task.task_id for task in tasks})
        self._ahead.ask([(task.task_id, functools.partial(first_ask, task, prompt, config))
                         for task in tasks if task.task_id not in self.state.resumed])

    def evaluate(self, task: Task, agent: object = None) -> TaskResult:
        """All --humanfix-samples attempts at the task, by a brought `agent` (None: the
        built-in one --humanfix-agent names). The first sample's outcome is the item's outcome;
        pass@k is computed from the counts over every sample. A task a harness error ended is
        run once more, whole, in this process (a model that failed to load is not loaded
        again: its retry would fail alike); a second error stands, scored not fixed
        (docs/reports.md, "Errors")."""
        results = self.samples(task, agent)
        first_try = None
        if results[-1].outcome == "error" and self._model_error is None:
            first_try = earlier_run({**sampled(results).to_dict(), "finished_at": finished_at()})
            results = self.samples(task, agent)
        result = sampled(results)
        result.first_try = first_try
        first = results[0]
        if self.settings.repeat_check and task.task_id in self.repeated \
                and first.outcome != "error":
            result.repeat_check = self.repeat(task, first)
        return result

    def samples(self, task: Task, agent: object) -> list[TaskResult]:
        """The task's --humanfix-samples results, up to the first that ended in an error."""
        results = [self.evaluate_once(task, agent)]
        while len(results) < self.settings.samples and results[-1].outcome != "error":
            results.append(self.evaluate_once(task, agent))
        return results

    @functools.cached_property
    def repeated(self) -> frozenset[str]:
        """The tasks whose first attempt --humanfix-repeat-check generates again."""
        return repeated(self.tasks, self.settings)

    def repeat(self, task: Task, first: TaskResult) -> RepeatCheck:
        """The task's repeat check, by --humanfix-repeat-with's model or the run's own."""
        spec = self.settings.repeat_with
        if spec and self._repeat_model is None and self._repeat_error is None:
            try:
                self._repeat_model = load_model(spec, self.generation_config())
            except Exception as exc:  # it fails only the repeat checks, once per process
                self._repeat_error = (f"--humanfix-repeat-with {spec!r} failed to load: "
                                      f"{type(exc).__name__}: {exc}")
        if self._repeat_error is not None:
            return RepeatCheck(error=self._repeat_error)
        model = OffClock(self._repeat_model or self.model())
        return repeat_check(task, first, model, self.task_sandbox(task), self.settings,
                            langgraph=self.uses_langgraph)

    def limit_for(self, task: Task) -> TaskLimit:
        """The wall-clock limits of the task's executions and of a re-run after a timeout."""
        return limit_under(self.settings, task.language,
                           self.state.canonical_seconds.get(task.task_id))

    def task_sandbox(self, task: Task) -> TaskSandbox:
        """The task's view of its language's sandbox: its limits and the re-run rule."""
        limit = self.limit_for(task)
        return TaskSandbox(self.sandbox_for(task.language), limit.seconds, limit.rerun_seconds)

    def plus_input_limits(self, task: Task) -> list[float]:
        """The CPU seconds each HumanEval+ input of the task may take, as EvalPlus sets them."""
        reference = self.state.plus_reference.get(task.task_id)
        return input_limits(reference["inputs"] if reference else [])

    def plus_limit_for(self, task: Task) -> TaskLimit:
        """The wall-clock limits of the task's HumanEval+ execution, a backstop behind its
        inputs' own: EvalPlus's for the whole check, or the one calibrated as the hidden
        tests' is, where larger (six programs compute their expected outputs as they go)."""
        reference = self.state.plus_reference.get(task.task_id)
        calibrated = limit_under(self.settings, task.language,
                                 reference["seconds"] if reference else None)
        seconds = max(program_limit(self.plus_input_limits(task)), calibrated.seconds)
        return dataclasses.replace(calibrated, seconds=seconds,
                                   rerun_seconds=rerun_limit(seconds, calibrated.cap))

    def plus_time_limit(self, task: Task) -> PlusTimeLimit:
        """Which limits the HumanEval+ execution ran under, and what they were set from."""
        reference = self.state.plus_reference.get(task.task_id)
        return PlusTimeLimit(
            seconds=self.plus_limit_for(task).seconds,
            reference_seconds=reference["seconds"] if reference else None,
            inputs=InputTimeLimits(
                clock="cpu", floor=MIN_TIME_LIMIT, factor=GT_TIME_LIMIT_FACTOR,
                longest=max(self.plus_input_limits(task), default=MIN_TIME_LIMIT),
                reference_longest=max(reference["inputs"], default=None) if reference else None))

    def plus_grader(self, task: Task) -> Callable[[str], Verdict] | None:
        """Runs a candidate on the task's HumanEval+ program, each input under its own limit
        and the whole under the program's (None without --humanfix-tests plus)."""
        # Asked first: the workload loads the dataset, which a Runner built for one task (the
        # repeat check's, a test's) need not have.
        if self.settings.tests != "plus":
            return None
        plus = self.workload.plus
        if plus is None:
            return None
        program, limits = plus.tasks[task.task_id].program, self.plus_input_limits(task)
        limit = self.plus_limit_for(task)
        sandbox = TaskSandbox(InputLimits(self.sandbox_for(task.language)), limit.seconds,
                              limit.rerun_seconds)
        return lambda code: sandbox.run(program(code, limits))

    def evaluate_once(self, task: Task, agent: object = None) -> TaskResult:
        """One sample; the first request of a task's first sample may have been asked ahead
        (a task is asked ahead once, and its reply taken once)."""
        started = time.monotonic()
        try:
            sandbox = self.task_sandbox(task)
            # Generation is off the item's clock: a slow reply is no timeout (session/timeouts).
            if agent is not None:
                result = run_agent(agent, agent_name(self.settings.agent), task,
                                   lambda: OffClock(self.model()), sandbox, self.settings,
                                   plus=self.plus_grader(task))
            else:
                model = self.model()
                if self._ahead is not None:
                    model = self._ahead.model_for(task.task_id, model)
                try:
                    result = repair(task, OffClock(model), sandbox,
                                    RepairConfig.of(self.settings),
                                    langgraph=self.uses_langgraph, plus=self.plus_grader(task))
                finally:
                    if isinstance(model, Handover):
                        model.release()
            result.sandbox_runs = sandbox.runs
            return result
        except (ModelLoadError, SandboxError) as exc:
            error = str(exc)
        except Exception as exc:  # a harness bug must not pass for "not fixed"
            error = "".join(traceback.format_exception_only(exc)).strip()
            error += "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:])
        return TaskResult.error_for(task, error, time.monotonic() - started)

    def close(self) -> None:
        """Stop what this process started for the run (the requests asked ahead, the warm
        executor's server, the toolchains' compile caches)."""
        if self._ahead is not None:
            self._ahead.close()
        for toolchain in self._toolchains.values():
            toolchain.shutdown()
        if "sandbox_choice" in self.__dict__:
            self.sandbox.shutdown()

    def record(self, result: TaskResult) -> Record:
        """The JSONL line for one task: the result plus what identifies the run, every text
        in it storable (`jsonl.storable`: what it cut is listed in `truncated`)."""
        task = self.workload.task(result.task_id)
        known_failure = LANGUAGES[task.language].known_failures.get(task.task_id)
        record, cut = storable({
            "run_id": self.state.run_id,
            "model": self.settings.model,
            **result.to_dict(),
            "language": task.language,
            # The reference solution cannot pass here: counted apart, never scored.
            **({"known_failure": known_failure} if known_failure else {}),
            "protocol": RunProtocol.of(self.settings, task.language).to_json(),
            # --humanfix-variant impossible: how the tests it was shown and graded on changed.
            **({"mutation": self.workload.impossible.mutations[task.task_id]}
               if self.workload.impossible else {}),
            "dataset": self.workload.labels[task.language],
            "dataset_hash": self.workload.dataset_hashes[task.language],
            "shard": self.workload.shard,
            "sandbox": self.sandbox.layer.name if "sandbox_choice" in self.__dict__ else None,
            "worker": worker_id(),
            "device": self.device,
            # Which limits applied: the calibrated ones, and what they were calibrated from.
            "time_limit": self.limit_for(task).to_json(),
            **({"plus_known_failure": PLUS_KNOWN_FAILURES[task.task_id]}
               if self.workload.plus and task.task_id in PLUS_KNOWN_FAILURES else {}),
            **({"plus_time_limit": self.plus_time_limit(task)} if self.workload.plus else {}),
            "model_error": self._model_error,
            "computed_by": self._model.computed_by
            if self._model is not None else None,
            # A fleet's servers this process took out of rotation so far, and why.
            "servers_out": getattr(self._model, "servers_out", []),
            # What a server refused that the client fits instead (a limit on stop strings).
            "server_limits": getattr(self._model, "server_limits", []),
            "finished_at": finished_at(),
        })
        if cut:
            record["truncated"] = cut
        return cast(Record, record)

