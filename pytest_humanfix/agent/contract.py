"""The contract of a brought agent: the `AgentContext` the plugin gives an agent it did not
write (the task as the variant shows it, the model as a chat client, `run_tests` and the round
budget), and how what the agent did becomes the task's record, graded by the built-in agents'
own `grading.graded` so that every report reads it alike. An agent's own failure is told apart
from a harness error (docs/own-agent.md#the-contract, #when-the-agent-goes-wrong).
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, cast

from ..dataset import Task
from ..languages import LANGUAGES
from ..models.base import Generation, Message, Model
from ..models.toolcalls import Tool, ToolCall
from ..records import AgentError, Attempt, TaskResult
from ..sandbox.environment import Sandbox, Verdict
from ..settings import Settings
from . import prompts
from .config import RepairConfig
from .context import PlainRuntime, RepairContext, RepairState
from .feedback import what_happened
from .grading import graded
from .loader import is_graph
from .nodes import check, execute, reply_attempt, told, unified_diff


@dataclass(frozen=True)
class TaskView:
    """What an agent may see of a task in the run's variant."""

    task_id: str
    language: str
    variant: str            # tests or docs
    entry_point: str
    signature: str
    declaration: str        # the function's signature and imports, without its docstring
    prompt_base: str        # the code an answer continues: the declaration, or in docs the
    #                         docstring prompt (BigCode's prompt base)
    buggy_code: str         # the declaration and the buggy body
    instruction: str        # Fix bugs in <entry point>.
    prompt: str             # the first turn the built-in agents send: BigCode's instruct prompt
    tests: str | None       # the task's tests in the tests variant; None in docs, where they
    #                         stay hidden
    fence: str              # the language's tag of a fenced code block (python, js, ...)

    @classmethod
    def of(cls, task: Task, variant: str) -> TaskView:
        return cls(task_id=task.task_id, language=task.language, variant=variant,
                   entry_point=task.entry_point, signature=task.signature,
                   declaration=task.declaration, prompt_base=prompts.prompt_base(task, variant),
                   buggy_code=task.buggy_code, instruction=prompts.instruction(task),
                   prompt=prompts.first_prompt(task, variant),
                   tests=task.test if variant == "tests" else None,
                   fence=LANGUAGES[task.language].fence)


@dataclass(frozen=True)
class Reply:
    """A model's reply: its text, and the calls it made where it was offered tools."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"  # length: it ran out of tokens
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class RunResult:
    """What `run_tests` found: the same the built-in repair agent is told."""

    passed: bool
    # passed / failed: run on the tests; rejected: not run, it failed the check (no code, a
    # syntax error, another signature); repeat: not run, the same code as an earlier run that
    # failed.
    status: Literal["passed", "failed", "rejected", "repeat"]
    feedback: str    # the turn the built-in repair agent would be told next ("" when passed)
    failure: str     # what went wrong alone: the failed assert with its values, the check's
    #                  reason, or for a repeat the earlier run's failure
    tests: str       # which tests ran: test, or example_test in docs; "" when none ran
    attempt: int     # the number of the attempt it is recorded as (1: the first)


class NoModel(RuntimeError):
    """`ctx.model` was asked in a run that names no model: the agent raised it, unless it
    catches it."""


class ContractBroken(Exception):
    """The agent did what the contract does not allow; the message says what, and the fix."""


@dataclass
class Trajectory:
    """What one agent did on one task, in order: the attempts of the record."""

    attempts: list[Attempt] = field(default_factory=list)
    runs: int = 0  # run_tests calls so far, which is also the round of the next reply
    # A model or sandbox fault: raised after the agent, even one it caught (a harness error).
    fault: Exception | None = None
    violation: str = ""  # a run past the budget, even one the agent caught


class ChatClient:
    """The run's model, as `ctx.model`: OpenAI-style messages in, the reply out. It is loaded
    on first use, so an agent that brings its own model never loads the run's."""

    def __init__(self, load: Callable[[], Model], task: Task, settings: Settings,
                 trajectory: Trajectory) -> None:
        self.spec = settings.model or ""
        self._load = load
        self._model: Model | None = None
        self._task = task
        self._settings = settings
        self._trajectory = trajectory

    def chat(self, messages: list[Message], *, temperature: float | None = None,
             stop: list[str] | None = None) -> str:
        """The reply's text; `temperature` None is the run's --humanfix-temperature."""
        return self.reply(messages, temperature=temperature, stop=stop).text

    def reply(self, messages: list[Message], *, temperature: float | None = None,
              stop: list[str] | None = None,
              tools: list[Tool] | None = None) -> Reply:
        """The whole reply: given `tools` (OpenAI's declarations), the calls it made, on an
        engine that serves them (a server, the controls, a replay)."""
        checked = _messages(messages)
        if not self.spec:
            raise NoModel("no model was named for this run, so ctx.model cannot answer: name "
                          "one with --humanfix-model SPEC, or have the agent call its own "
                          "model (and record its replies with ctx.model.record)")
        began = time.monotonic()
        try:
            if self._model is None:
                self._model = self._load()
            generation = self._model.generate(checked, self._task, temperature=temperature,
                                              tools=tools, stop=stop)
        except Exception as exc:
            self._trajectory.fault = exc
            raise
        self._append(generation, temperature, began, tools is not None)
        return Reply(text=generation.text, tool_calls=list(generation.tool_calls),
                     finish_reason=generation.finish_reason,
                     prompt_tokens=generation.prompt_tokens,
                     completion_tokens=generation.completion_tokens)

    def record(self, text: str, *, prompt_tokens: int = 0, completion_tokens: int = 0,
               seconds: float = 0.0, temperature: float | None = None,
               engine: str = "") -> None:
        """Records a reply the agent got from a model of its own, as an attempt."""
        self._append(Generation(text=text, prompt_tokens=prompt_tokens,
                                completion_tokens=completion_tokens, seconds=seconds,
                                engine=engine), temperature, time.monotonic(), False)

    def _append(self, generation: Generation, temperature: float | None, began: float,
                offered_tools: bool) -> None:
        trajectory = self._trajectory
        calls = len(generation.tool_calls) if offered_tools else None
        used = self._settings.temperature if temperature is None else temperature
        trajectory.attempts.append(reply_attempt(generation, "chat", trajectory.runs, used,
                                                       began, calls))


def _messages(messages: object) -> list[Message]:
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise ValueError("ctx.model.chat takes a non-empty list of OpenAI-style messages, "
                         "dicts with a role and a content, e.g. [{'role': 'user', "
                         "'content': ctx.task.prompt}]")
    return [dict(message) for message in messages]


class AgentContext:
    """What the agent is called with: `task`, `model`, `run_tests` and `rounds`, the repair's
    `config` (the temperature schedule and stop the built-in agents use) and the run's frozen
    `settings` (every option, e.g. the servers of openai:<model>)."""

    def __init__(self, identity: str, task: Task, model: ChatClient, settings: Settings,
                 repair_context: RepairContext, trajectory: Trajectory) -> None:
        config = repair_context.config
        self.task = TaskView.of(task, config.variant)
        self.model = model
        self.rounds = config.iters
        self.config = config
        self.settings = settings
        self._identity = identity
        self._repair_context = repair_context
        self._trajectory = trajectory

    def run_tests(self, code: str) -> RunResult:
        """Checks `code` and runs it on the tests the variant lets an agent run (the task's
        tests; in docs, the docstring's examples). Each call is an attempt, the latest reply's
        if it has not been run; at most `rounds + 1` calls."""
        trajectory = self._trajectory
        if not isinstance(code, str):
            raise TypeError(f"ctx.run_tests takes the code as a str, not "
                            f"{type(code).__name__}")
        if trajectory.runs > self.rounds:
            trajectory.violation = (
                f"{self._identity} called run_tests {trajectory.runs + 1} times, and "
                f"--humanfix-iters {self.rounds} allows {self.rounds + 1} (the first attempt "
                "and one per repair round): stop at ctx.rounds + 1 calls, or raise "
                "--humanfix-iters.")
            raise ContractBroken(trajectory.violation)
        unrun = bool(trajectory.attempts) and _unrun(trajectory.attempts[-1])
        attempts, _ = _with_code(trajectory, code, self._repair_context.task,
                                 len(trajectory.attempts) - 1 if unrun else None)
        state: RepairState = {"messages": [], "attempts": attempts, "rounds_left": 0,
                                    "round": trajectory.runs, "resamples": 0, "result": None}
        runtime = PlainRuntime(self._repair_context)
        try:
            state["attempts"] = check(state, runtime).get("attempts", attempts)
            if state["attempts"][-1].status == "":
                state["attempts"] = execute(state, runtime)["attempts"]
        except Exception as exc:
            trajectory.fault = exc
            raise
        latest = state["attempts"][-1]
        # A repeat of code that passed passes as it did: only code that failed is not run.
        ran = state["attempts"][latest.repeat_of - 1] if latest.repeat_of else latest
        passed = ran.status == "passed"
        feedback = "" if passed else told(self._repair_context, state["attempts"], "chat")
        trajectory.attempts = [*state["attempts"][:-1],
                               dataclasses.replace(latest, feedback=feedback)]
        trajectory.runs += 1
        return RunResult(passed=passed, status=latest.status,  # type: ignore[arg-type]
                         feedback=feedback, failure=_failure(state["attempts"]),
                         tests=latest.tests, attempt=len(trajectory.attempts))


def _unrun(attempt: Attempt) -> bool:
    """A reply whose code the agent has not run (nor submitted)."""
    return attempt.status == "" and not attempt.code


def _with_code(trajectory: Trajectory, code: str, task: Task,
               index: int | None) -> tuple[list[Attempt], int]:
    """The attempts with `code` put on attempt `index`, or on a new one of its own (None),
    and where it was put."""
    attempts = list(trajectory.attempts)
    diff = unified_diff(task.buggy_code, code)
    if index is None:
        attempts.append(Attempt(code=code, diff=diff, verdict=None, round=trajectory.runs))
        return attempts, len(attempts) - 1
    attempts[index] = dataclasses.replace(attempts[index], code=code, diff=diff)
    return attempts, index


def _failure(attempts: list[Attempt]) -> str:
    latest = attempts[-1]
    if latest.status == "rejected":
        return latest.check
    if latest.status == "repeat" and latest.repeat_of is not None:
        latest = attempts[latest.repeat_of - 1]
    return what_happened(Verdict(**latest.verdict)) if latest.verdict else ""


def _invoke(agent: object, identity: str, ctx: AgentContext) -> object:
    """The agent's final code: a callable's return value, or a graph's `code` at its end."""
    if not is_graph(agent):
        return agent(ctx)  # type: ignore[operator]
    state = agent.invoke(  # type: ignore[attr-defined]
        {"messages": [{"role": "user", "content": ctx.task.prompt}], "code": None},
        context=ctx)
    if not isinstance(state, dict) or "code" not in state:
        raise ContractBroken(f"{identity} ended without a `code` in its state: give the "
                             "graph's state a code key, set to the final code (or None).")
    return state["code"]


def run_agent(agent: object, identity: str, task: Task, load_model: Callable[[], Model],
              sandbox: Sandbox, settings: Settings,
              plus: Callable[[str], Verdict] | None = None) -> TaskResult:
    """One task repaired by a brought agent and graded; a model or sandbox fault is raised
    (the runner's harness error), whatever the agent made of it."""
    started = time.monotonic()
    trajectory = Trajectory()
    chat = ChatClient(load_model, task, settings, trajectory)
    # The built-in agents' context: `check`, `execute` and `graded` read it; the model is
    # there only for its prompt kind, which a brought agent's chat always is.
    repair_context = RepairContext(
        task=task, model=cast(Model, _ChatKind(settings.model or "")), sandbox=sandbox,
        config=RepairConfig.of(settings), plus=plus)
    ctx = AgentContext(identity, task, chat, settings, repair_context, trajectory)
    failure = ""
    raised: AgentError | None = None
    try:
        code = _invoke(agent, identity, ctx)
    except ContractBroken as exc:
        code, failure = None, str(exc)
    except Exception as exc:
        code = None
        failure = f"{identity} raised {_agent_traceback(exc)}"
        raised = agent_error_of(exc)
    if trajectory.fault is not None:
        raise trajectory.fault
    failure = trajectory.violation or failure
    if not failure and code is not None and not isinstance(code, str):
        failure = (f"{identity} returned a {type(code).__name__}, not the final code: return "
                   "the code as a str, or None to give up.")
    if failure or code is None:
        result = TaskResult(task_id=task.task_id, entry_point=task.entry_point,
                            bug_type=task.bug_type, outcome="unfixed",
                            failure=failure or f"{identity} gave up (it returned None).",
                            attempts=trajectory.attempts, agent_error=raised)
    else:
        attempts, index = _final(trajectory, str(code), task)
        result = graded(repair_context, attempts, index)
    result.seconds = round(time.monotonic() - started, 4)
    return result


def agent_error_of(exc: Exception) -> AgentError:
    """The exception as a record keeps it: its type and its message's first line."""
    lines = str(exc).strip().splitlines()
    return {"type": type(exc).__name__, "message": lines[0] if lines else ""}


def _agent_traceback(exc: Exception) -> str:
    """The exception's line, then its traceback from the agent's first frame on."""
    frames = exc.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
        frames = frames.tb_next
    return ("".join(traceback.format_exception_only(exc)).strip() + "\n"
            + "".join(traceback.format_exception(type(exc), exc, frames)).strip())


def _final(trajectory: Trajectory, code: str, task: Task) -> tuple[list[Attempt], int]:
    """The attempts, and the index of the one the final code is: the first that holds it (the
    round that made it, which a fix is counted in), else the latest reply the agent did not run
    (the built-in agent's final candidate where it asked again), else a new attempt."""
    for index, attempt in enumerate(trajectory.attempts):
        if attempt.code == code:
            return trajectory.attempts, index
    unrun = [index for index, attempt in enumerate(trajectory.attempts) if _unrun(attempt)]
    return _with_code(trajectory, code, task, unrun[-1] if unrun else None)


@dataclass(frozen=True)
class _ChatKind:
    """Stands in for the model in the built-in agents' context, whose nodes read only its
    prompt kind (and `spec`, to name it)."""

    spec: str
    prompt: Literal["chat"] = "chat"
