"""The repair agent: a LangGraph state machine around the model and the sandbox.

    propose -> check -> execute -> (fixed or budget spent) -> finish
      ^        |  |        |
      |        |  +--------+--> reflect -> propose        (while rounds are left)
      +- resample <-+ (a repeat, while the round has asks left)

`propose` asks the model as its prompt kind says (a chat reply, a completion, or a primed
answer that continues the prompt base) and extracts its code; `check` parses it and compares the
entry point with the declaration (nothing runs), and spots a reply that repeats an earlier
attempt; `execute` runs it in the sandbox on the tests the protocol lets the agent see during
repair (the task's `test` in the `tests` variant, only its `example_test` in the `docs`
variant), its asserts explained (`feedback`); `reflect` turns what went wrong into the next user
turn: the attempt's code (not the whole reply) and what happened. `finish` grades the final
candidate on the full hidden `test`, reusing an execution of the same code where there is one.

`settings.iters` is the number of repair rounds after the first attempt. A reply that repeats
code that already failed is asked for again within its round (`resample`), at each of
`settings.resample_temperature` in turn, before the round counts: a greedy model that repeats
itself would repeat itself again. A rejected reply, or a repeat once those asks are spent, costs
its round like any other. The first attempt is sampled at `settings.temperature` (greedy by
default, so round 0 is strict pass@1) and repair round k at `settings.temperature_of(k)`.

The function-calling agent (`--humanfix-agent tools`) is the same loop told through OpenAI's
tools API, as the repair agents that call a `run_code` tool are:

    call -> check -> execute -> (fixed or budget spent) -> finish
      ^      |  |  |       |
      |      |  |  +-------+--> reflect -> call            (while calls are left)
      |      |  +--> finish                                (a reply without a call)
      +- resample <-+

`call` asks the model with the `run_tests(code)` tool declared; the code of its first call is
the attempt, checked and run as `propose`'s is, and `reflect` puts the call (its code) and the
tool's answer (what the code did) into the conversation. A reply without a call ends the repair:
its code, where it has any, is the final candidate, else the code of the latest call
(`final_candidate`). A passing call ends it too, as a passing round does. Round k is the k-th
call after the first, so `settings.iters` bounds the calls and pass@1 by round means the same
for both agents.

Each graph is written down once, as data (`GRAPHS`: its nodes and what follows each).
`repair_graph` compiles one with LangGraph; `walk` runs the same nodes and routers as plain
calls, for the control models: their replies are known, and importing LangGraph is over a second
of a run that otherwise takes one.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from ..dataset import Task
from ..languages import LANGUAGES
from ..models.base import Generation, Message, Model, PromptKind
from ..models.toolcalls import reply_text, written_calls
from ..plus import verdicts as plus_verdicts
from ..records import Attempt, TaskResult, attempt_round
from ..sandbox.environment import Sandbox, Verdict
from ..settings import Settings
from . import prompts
from .braces import continued_code as continued_braced, extract_braced
from .extract import continued_code, extract_code, same_code
from .feedback import explained_tests, what_happened
from .precheck import check_candidate
from .suspicion import guard_flag, guard_program, guarded_tests, suspicion_flags

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

# Graph steps one round can take (propose, check, execute, reflect), those of each ask again
# (resample, propose, check), and finish once.
STEPS_PER_ROUND = 4
STEPS_PER_RESAMPLE = 3


def unified_diff(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="buggy", tofile="candidate"))


def recursion_limit(iters: int, resamples: int = 0) -> int:
    return (STEPS_PER_ROUND + STEPS_PER_RESAMPLE * resamples) * (iters + 1) + 1



@dataclass(frozen=True)
class RepairContext:
    """What stays fixed while one task is repaired (LangGraph's run-scoped context)."""

    task: Task
    model: Model
    sandbox: Sandbox
    settings: Settings
    # --humanfix-tests plus: runs a candidate on HumanEval+ (None without it). Only `finish`
    # calls it: the repair rounds never see HumanEval+.
    plus: Callable[[str], Verdict] | None = None

    @property
    def base(self) -> str:
        return prompts.prompt_base(self.task, self.settings.variant)

    @property
    def round_tests(self) -> tuple[str, str]:
        """(name, code) of the tests the agent may run during repair."""
        if self.settings.variant == "docs":
            return "example_test", self.task.example_test
        return "test", self.task.test


class RepairRuntime(Protocol):
    """What a node needs of the runtime LangGraph passes it (a `langgraph.runtime.Runtime`)."""

    @property
    def context(self) -> RepairContext: ...


class RepairState(TypedDict):
    messages: list[Message]  # the chat so far, ending with a user (or tool) turn before a reply
    attempts: list[Attempt]         # one per reply, in order
    rounds_left: int                # rounds still allowed after the latest one
    round: int                      # the round of the next reply (0: the first attempt)
    resamples: int                  # asks again spent in that round
    result: TaskResult | None       # set by `finish`


def _replace_last(attempts: list[Attempt], **changes: Any) -> list[Attempt]:
    return [*attempts[:-1], dataclasses.replace(attempts[-1], **changes)]


def _run(ctx: RepairContext, code: str, tests: str) -> Verdict:
    if ctx.task.language == "python":
        tests = explained_tests(tests)
    return ctx.sandbox.run(LANGUAGES[ctx.task.language].program(code, tests, ctx.task))


def _run_hidden(ctx: RepairContext, code: str) -> tuple[Verdict, str | None]:
    """The verdict of the task's hidden tests, and the guard's flag from the same execution
    ("" when it found nothing; None when the tests could not hold the guard). A run the guard
    stopped proved nothing about the tests: they run again without it for the verdict."""
    guarded = guarded_tests(ctx.task)
    if guarded is None:
        return _run(ctx, code, ctx.task.test), None
    verdict = _run(ctx, code, guarded)
    flag = guard_flag(verdict)
    if flag:
        verdict = _run(ctx, code, ctx.task.test)
    return verdict, flag


def _code_of(ctx: RepairContext, text: str, continued: bool) -> str:
    """The candidate in a reply (a chat answer) or a continuation of the prompt base (a
    completion, or a primed answer)."""
    language = LANGUAGES[ctx.task.language]
    if language.name == "python":
        return continued_code(text, ctx.base) if continued else \
            extract_code(text, ctx.task.entry_point, ctx.base, ctx.task.buggy_code)
    if continued:
        return continued_braced(text, ctx.base, language)
    return extract_braced(text, ctx.task.entry_point, ctx.base,
                          ctx.base + ctx.task.buggy_solution, language)


def reply_attempt(generation: Generation, kind: PromptKind, in_round: int, temperature: float,
                  began: float, tool_calls: int | None = None) -> Attempt:
    """The attempt of a reply, before any code is read from it: what it said and cost."""
    seconds = generation.seconds or time.monotonic() - began
    return Attempt(code="", diff="", verdict=None, prompt_tokens=generation.prompt_tokens,
                   completion_tokens=generation.completion_tokens,
                   generate_seconds=round(seconds, 4),
                   reply=reply_text(generation.text, generation.tool_calls),
                   prompt=kind, finish_reason=generation.finish_reason,
                   engine=generation.engine, server=generation.server,
                   round=in_round, temperature=temperature, tool_calls=tool_calls)


def _asked(ctx: RepairContext, state: RepairState, generation: Generation, code: str,
           kind: PromptKind, temperature: float, began: float,
           tool_calls: int | None = None) -> dict[str, Any]:
    """The state's update for a reply: its attempt appended, and its round counted."""
    attempt = dataclasses.replace(
        reply_attempt(generation, kind, state["round"], temperature, began, tool_calls),
        code=code, diff=unified_diff(ctx.task.buggy_code, code))
    # An ask again belongs to the round it repeats: the round was counted at its first reply.
    spent = 0 if state["resamples"] else 1
    return {"attempts": [*state["attempts"], attempt],
            "rounds_left": state["rounds_left"] - spent}


def propose(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    began = time.monotonic()
    kind = ctx.model.prompt
    temperature = ctx.settings.temperature_of(state["round"], state["resamples"])
    if kind == "completion":
        generation = ctx.model.complete(
            prompts.completion_prompt(state["messages"], ctx.base), prompts.stop_words(ctx.task),
            ctx.task, temperature=temperature)
    elif kind == "primed":
        generation = ctx.model.continue_answer(
            state["messages"], prompts.answer_start(ctx.task, ctx.settings.variant),
            prompts.stop_words(ctx.task), ctx.task, temperature=temperature)
    else:
        generation = ctx.model.generate(state["messages"], ctx.task, temperature=temperature,
                                        stop=prompts.chat_stop(ctx.settings.chat_stop, ctx.task))
    return _asked(ctx, state, generation, _code_of(ctx, generation.text, continued=kind != "chat"),
                  kind, temperature, began)


def call(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The function-calling agent's reply: the code of its first call (a call without a `code`
    text holds no code, which `check` rejects), else the code in what it said. Further calls
    in the same reply are counted, not run: one call is one round. A reply whose server found
    no call may hold one written as bare JSON (`written_calls`), which counts as a call."""
    ctx = runtime.context
    began = time.monotonic()
    temperature = ctx.settings.temperature_of(state["round"], state["resamples"])
    generation = ctx.model.generate(state["messages"], ctx.task, temperature=temperature,
                                    tools=[prompts.run_tests_tool(ctx.settings.variant)])
    calls = generation.tool_calls or written_calls(generation.text)
    if calls:
        code = calls[0].argument("code")
        code = _code_of(ctx, code, continued=False) if isinstance(code, str) else ""
    else:
        code = _code_of(ctx, generation.text, continued=False)
    return _asked(ctx, state, generation, code, "chat", temperature, began,
                  tool_calls=len(calls))


def check(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    *earlier, latest = state["attempts"]
    # A completion's code follows the prompt base with its last newline stripped.
    base = ctx.base.rstrip()
    empty = latest.code.startswith(base) and not latest.code[len(base):].strip()
    reason = "the reply holds no code." if empty or not latest.code.strip() else \
        check_candidate(latest.code, ctx.task)
    if reason:
        return {"attempts": _replace_last(state["attempts"], status="rejected", check=reason)}
    for number, attempt in enumerate(earlier, 1):
        if attempt.status in ("passed", "failed") and same_code(attempt.code, latest.code):
            return {"attempts": _replace_last(state["attempts"], status="repeat", repeat_of=number)}
    return {}


def execute(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    name, tests = ctx.round_tests
    code = state["attempts"][-1].code
    verdict, guard = _run_hidden(ctx, code) if name == "test" else (_run(ctx, code, tests), None)
    return {"attempts": _replace_last(
        state["attempts"], status="passed" if verdict.passed else "failed", tests=name,
        verdict=verdict.to_dict(), execute_seconds=verdict.seconds, guard=guard)}


def _failure_of(attempt: Attempt) -> str:
    verdict = attempt.verdict
    return what_happened(Verdict(**verdict)) if verdict else ""


def resample(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """Ask again, within the round, for a reply that repeated failed code: `propose` samples it
    at the next of the resample temperatures, from the same conversation. A turn telling the
    model that it repeated itself, put before the ask, was measured and not kept: on qwen-coder
    (first 40 tasks, 3 rounds) it fixed 11 tasks against 12, and 75 of 91 rounds still ended on
    a repeat against 52 of 90 (docs/benchmarks.md, "Repair rounds")."""
    return {"resamples": state["resamples"] + 1}


def told(ctx: RepairContext, attempts: list[Attempt], kind: PromptKind) -> str:
    """What the repair agent tells the model after its latest attempt: why it was not run, that
    it repeats an earlier one, or what it did (also what a brought agent's run_tests returns)."""
    latest = attempts[-1]
    if latest.status == "rejected":
        return prompts.rejection_feedback(ctx.task, latest.check, kind)
    if latest.status == "repeat":
        assert latest.repeat_of is not None  # `check` names the earlier attempt
        return prompts.repeat_feedback(
            ctx.task, latest.repeat_of, _failure_of(attempts[latest.repeat_of - 1]), kind)
    return prompts.failure_feedback(ctx.task, _failure_of(latest),
                                    example_only=latest.tests == "example_test", prompt=kind)


def reflect(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    ctx = runtime.context
    attempts = state["attempts"]
    latest = attempts[-1]
    kind = ctx.model.prompt
    feedback = told(ctx, attempts, kind)
    messages = [*state["messages"], {"role": "assistant", "content": prompts.attempt_turn(
                    ctx.task, latest.code, latest.reply, kind)},
                {"role": "user", "content": feedback}]
    return {"messages": messages, "attempts": _replace_last(attempts, feedback=feedback),
            "round": state["round"] + 1, "resamples": 0}


def reflect_call(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    """The function-calling agent's turn after a call that did not pass: the call, as the code
    it ran (not the whole reply), and the tool's answer: what that code did."""
    attempts = state["attempts"]
    latest = attempts[-1]
    if latest.status == "rejected":
        detail = latest.check
    elif latest.status == "repeat":
        assert latest.repeat_of is not None  # `check` names the earlier attempt
        detail = _failure_of(attempts[latest.repeat_of - 1])
    else:
        detail = _failure_of(latest)
    result = prompts.tool_result(latest.status, detail, latest.tests == "example_test")
    # Numbered by the attempt: unique in the conversation, and the same in every run.
    call_id = f"call_{len(attempts)}"
    messages = [*state["messages"],
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call_id, "type": "function", "function": {
                        "name": prompts.RUN_TESTS,
                        "arguments": json.dumps({"code": latest.code.strip()})}}]},
                {"role": "tool", "tool_call_id": call_id, "content": result}]
    return {"messages": messages, "attempts": _replace_last(attempts, feedback=result),
            "round": state["round"] + 1, "resamples": 0}


def final_candidate(attempts: list[Attempt]) -> int:
    """Index of the attempt that is graded: the latest one that passed the check (the agent
    would not submit code it knows cannot run), else the latest one."""
    for index in range(len(attempts) - 1, -1, -1):
        if attempts[index].status != "rejected":
            return index
    return len(attempts) - 1


def finish(state: RepairState, runtime: RepairRuntime) -> dict[str, Any]:
    result = graded(runtime.context, state["attempts"], final_candidate(state["attempts"]))
    return {"result": result, "attempts": result.attempts}


def graded(ctx: RepairContext, attempts: list[Attempt], index: int) -> TaskResult:
    """The task's result with attempt `index` as the final candidate, graded on the hidden
    tests (and HumanEval+), reusing an execution of the same code where there is one."""
    attempts = list(attempts)
    code = attempts[index].code
    ran = next((a for a in attempts
                if a.tests == "test" and a.verdict and same_code(a.code, code)), None)
    if ran is not None and ran.verdict is not None:
        graded, guard = ran.verdict, ran.guard
    else:
        hidden, guard = _run_hidden(ctx, code)
        graded = hidden.to_dict()
    if attempts[index].status == "":  # passed the check, not run in a round: graded only
        attempts[index] = dataclasses.replace(attempts[index], status="graded", guard=guard)
    verdict = Verdict(**graded)
    flags = suspicious(ctx, code, guard) if verdict.passed else []
    fixed = verdict.passed and not (flags and ctx.settings.strict)
    if not verdict.passed:
        failure = verdict.first_failure()
    else:
        failure = "" if fixed else "flagged, scored not fixed (--humanfix-strict): " + \
            "; ".join(flags)
    # Recorded here, where the outcome is decided, so that pass@1 by round needs no reading
    # of attempts afterwards.
    fixed_round = attempt_round(vars(attempts[index]), index) if fixed else None
    plus: dict[str, Any] = {}
    if ctx.plus is not None:
        # Run whatever the hidden verdict: a candidate that failed them still shows whether
        # HumanEval+ tells it apart (the buggy control must fail every task there).
        on_plus = ctx.plus(code)
        plus = {"plus_verdict": on_plus.to_dict(),
                "plus_outcome": "fixed" if fixed and on_plus.passed else "unfixed",
                "plus_failure": "" if on_plus.passed else plus_verdicts.failure(on_plus)}
    result = TaskResult(
        task_id=ctx.task.task_id, entry_point=ctx.task.entry_point, bug_type=ctx.task.bug_type,
        outcome="fixed" if fixed else "unfixed", code=code,
        diff=attempts[index].diff, verdict=graded, failure=failure, attempts=attempts,
        final_attempt=index, fixed_round=fixed_round, flags=flags, **plus)
    return result


def suspicious(ctx: RepairContext, code: str, guard: str | None) -> list[str]:
    """How a candidate that passed may have defeated the tests: read from its code, else shown
    by the guard of its graded run (`guard`), or, where that run had none, by a second run of
    the tests with the entry point's return values guarded."""
    if ctx.task.language != "python":  # the checks read Python code and run Python guards
        return []
    flags = suspicion_flags(code, ctx.task.test)
    if not flags:
        if guard is None:
            guard = guard_flag(ctx.sandbox.run(guard_program(code, ctx.task)))
        flags = [guard] if guard else []
    return flags


def after_check(state: RepairState, runtime: RepairRuntime) -> str:
    ctx = runtime.context
    latest = state["attempts"][-1]
    if latest.status == "repeat" and state["resamples"] < len(ctx.settings.resample_temperature):
        return "resample"
    if latest.status in ("rejected", "repeat"):
        return "reflect" if state["rounds_left"] > 0 else "finish"
    if ctx.settings.variant == "docs" and (state["rounds_left"] == 0 or not ctx.round_tests[1]):
        # Running the examples would change nothing: no round is left to act on them.
        return "finish"
    return "execute"


def after_call_check(state: RepairState, runtime: RepairRuntime) -> str:
    """A reply without a call is the model's last word; a call goes on as a round's reply."""
    if not state["attempts"][-1].tool_calls:
        return "finish"
    return after_check(state, runtime)


def after_execute(state: RepairState, runtime: Any) -> str:
    if state["attempts"][-1].status == "passed" or state["rounds_left"] == 0:
        return "finish"
    return "reflect"


# Nodes and routers alike take (state, runtime) and read the RepairContext from the runtime.
Node = Callable[[RepairState, Any], dict[str, Any]]
Router = Callable[[RepairState, Any], str]

# What follows a node: the next node, a router and the nodes it may choose, or None (the end).
After = str | tuple[Router, tuple[str, ...]] | None


@dataclass(frozen=True)
class Graph:
    first: str
    nodes: dict[str, Node]
    next: dict[str, After]


def repair_loop(ask_name: str, ask: Node, reflect_node: Node, check_router: Router) -> Graph:
    """Both agents are one loop: ask, check, execute, and reflect or finish; they differ in how
    a reply is asked for (`ask`), how what happened goes back to the model (`reflect_node`),
    and what may follow the check (`check_router`)."""
    return Graph(ask_name, {
        ask_name: ask, "check": check, "execute": execute, "resample": resample,
        "reflect": reflect_node, "finish": finish}, {
        ask_name: "check",
        "check": (check_router, ("execute", "resample", "reflect", "finish")),
        "execute": (after_execute, ("reflect", "finish")),
        "resample": ask_name,
        "reflect": ask_name,
        "finish": None})


# By --humanfix-agent.
GRAPHS: dict[str, Graph] = {
    "repair": repair_loop("propose", propose, reflect, after_check),
    "tools": repair_loop("call", call, reflect_call, after_call_check),
}


@functools.cache
def repair_graph(agent: str = "repair"
                 ) -> CompiledStateGraph[RepairState, RepairContext, RepairState, RepairState]:
    """The agent's compiled graph, built once per process; langgraph is imported only here."""
    from langgraph.graph import END, START, StateGraph

    spec = GRAPHS[agent]
    graph = StateGraph(RepairState, context_schema=RepairContext)
    for name, node in spec.nodes.items():
        # The nodes take a RepairRuntime, the protocol of the Runtime LangGraph passes; its
        # overloads name only its own Runtime class.
        graph.add_node(name, node)  # type: ignore[call-overload]
    graph.add_edge(START, spec.first)
    for name, after in spec.next.items():
        if after is None:
            graph.add_edge(name, END)
        elif isinstance(after, str):
            graph.add_edge(name, after)
        else:
            router, choices = after
            graph.add_conditional_edges(name, router, list(choices))
    return graph.compile()


@dataclass(frozen=True)
class PlainRuntime:
    """The part of LangGraph's Runtime the nodes read, for `walk`."""

    context: RepairContext


def walk(state: RepairState, context: RepairContext, limit: int) -> RepairState:
    """The compiled graph's run as plain calls: the same nodes in the same order, each one's
    update replacing the keys it returns (the state has no reducers), and the same step limit
    (LangGraph's recursion limit allows limit - 1 node runs)."""
    runtime = PlainRuntime(context)
    spec = GRAPHS[context.settings.agent]
    name = spec.first
    for _ in range(limit - 1):
        state = cast(RepairState, {**state, **spec.nodes[name](state, runtime)})
        after = spec.next[name]
        if after is None:
            return state
        name = after if isinstance(after, str) else after[0](state, runtime)
    raise RecursionError(f"the repair agent took more than {limit - 1} steps")


def repair(task: Task, model: Model, sandbox: Sandbox, settings: Settings, *,
           langgraph: bool = True, plus: Callable[[str], Verdict] | None = None) -> TaskResult:
    """One task's repair: through the compiled LangGraph graph, or, with `langgraph=False`,
    the same graph walked as plain calls (`walk`)."""
    started = time.monotonic()
    context = RepairContext(task=task, model=model, sandbox=sandbox, settings=settings,
                            plus=plus)
    first = prompts.first_tool_messages if settings.agent == "tools" else prompts.first_messages
    state: RepairState = {"messages": first(task, settings.variant),
                          "attempts": [], "rounds_left": settings.iters + 1, "round": 0,
                          "resamples": 0, "result": None}
    limit = recursion_limit(settings.iters, len(settings.resample_temperature))
    final: RepairState
    if langgraph:
        final = cast(RepairState, repair_graph(settings.agent).invoke(
            state, {"recursion_limit": limit}, context=context))
    else:
        final = walk(state, context, limit)
    result = final["result"]
    assert result is not None, "every path ends at finish, which sets the result"
    result.seconds = round(time.monotonic() - started, 4)
    return result
