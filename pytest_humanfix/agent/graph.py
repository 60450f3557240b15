"""The repair agent's entry point: `repair` runs one task through its graph (agent/routing.py),
compiled with LangGraph, or walked as plain calls for the control models, whose replies are
known and for which importing LangGraph would be over a second of the run. The loop, its
rounds and its asks again are told in docs/agent.md, "The repair loop"."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from ..dataset import Task
from ..models.base import Model
from ..records import TaskResult
from ..sandbox.environment import Sandbox, Verdict
from . import prompts
from .config import RepairConfig
from .context import PlainRuntime, RepairContext, RepairState
from .routing import GRAPHS

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

# Graph steps one round can take (propose, check, execute, reflect), those of each ask again
# (ask_again, propose, check), and finish once.
STEPS_PER_ROUND = 4
STEPS_PER_ASK_AGAIN = 3


def recursion_limit(iters: int, resamples: int = 0) -> int:
    return (STEPS_PER_ROUND + STEPS_PER_ASK_AGAIN * resamples) * (iters + 1) + 1


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


def walk(state: RepairState, context: RepairContext, limit: int) -> RepairState:
    """The compiled graph's run as plain calls: the same nodes in the same order, each one's
    update replacing the keys it returns (the state has no reducers), and the same step limit
    (LangGraph's recursion limit allows limit - 1 node runs)."""
    runtime = PlainRuntime(context)
    spec = GRAPHS[context.config.agent]
    name = spec.first
    for _ in range(limit - 1):
        state = cast(RepairState, {**state, **spec.nodes[name](state, runtime)})
        after = spec.next[name]
        if after is None:
            return state
        name = after if isinstance(after, str) else after[0](state, runtime)
    raise RecursionError(f"the repair agent took more than {limit - 1} steps")


def repair_context(task: Task, model: Model, sandbox: Sandbox, config: RepairConfig,
                   plus: Callable[[str], Verdict] | None = None) -> RepairContext:
    """The task's context, with what the agent's graph decides of its rounds: which are first
    attempts, and whether a repeat is asked again."""
    spec = GRAPHS[config.agent]
    return RepairContext(task=task, model=model, sandbox=sandbox, config=config, plus=plus,
                         first_attempts=spec.first_attempts, asks_again=spec.asks_again)


def repair(task: Task, model: Model, sandbox: Sandbox, config: RepairConfig, *,
           langgraph: bool = True, plus: Callable[[str], Verdict] | None = None) -> TaskResult:
    """One task's repair: through the compiled LangGraph graph, or, with `langgraph=False`,
    the same graph walked as plain calls (`walk`)."""
    started = time.monotonic()
    context = repair_context(task, model, sandbox, config, plus)
    first = prompts.first_tool_messages if config.agent == "tools" else prompts.first_messages
    state: RepairState = {"messages": first(task, config.variant),
                          "attempts": [], "rounds_left": config.iters + 1, "round": 0,
                          "resamples": 0, "result": None}
    limit = recursion_limit(config.iters, config.resamples)
    final: RepairState
    if langgraph:
        final = cast(RepairState, repair_graph(config.agent).invoke(
            state, {"recursion_limit": limit}, context=context))
    else:
        final = walk(state, context, limit)
    result = final["result"]
    assert result is not None, "every path ends at finish, which sets the result"
    result.seconds = round(time.monotonic() - started, 4)
    return result
