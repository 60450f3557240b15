"""The built-in agents' graphs written down once, as data: what follows each node, and the
routers that choose after `check` and `execute` (`GRAPHS`, by --humanfix-agent). agent/graph.py
compiles them with LangGraph or walks them as plain calls (docs/agent.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .context import RepairRuntime, RepairState
from .nodes import (
    ask_again,
    call,
    check,
    execute,
    finish,
    propose,
    reflect,
    reflect_call,
    sample_again,
    sample_anew,
)


def after_check(state: RepairState, runtime: RepairRuntime) -> str:
    ctx = runtime.context
    latest = state["attempts"][-1]
    if latest.status == "repeat" and ctx.may_ask_again(state):
        return "ask_again"
    if latest.status in ("rejected", "repeat"):
        return "reflect" if state["rounds_left"] > 0 else "finish"
    if ctx.config.variant == "docs" and (state["rounds_left"] == 0 or not ctx.round_tests[1]):
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
    # The rounds that are first attempts, each from a prompt of its own at the first attempt's
    # temperature, not the round schedule's: `rewrite`'s round 1 is one (nodes.sample_anew).
    first_attempts: int = 1
    # Whether a reply that repeats failed code is asked again within its round (the
    # `ask_again` node); where not, the repeat costs its round, so that each round is one reply.
    asks_again: bool = True


def repair_loop(ask_name: str, ask: Node, reflect_node: Node, check_router: Router, *,
                asks_again: bool = True, first_attempts: int = 1) -> Graph:
    """The built-in agents are one loop: ask, check, execute, and reflect or finish; they differ
    in how a reply is asked for (`ask`), how what happened goes back to the model
    (`reflect_node`; for `resample`, nothing does), what may follow the check (`check_router`)
    and whether a reply that repeats failed code is asked again within its round
    (`asks_again`: the `ask_again` node, and the context's `may_ask_again`, which `after_check`
    reads, so that one rule routes every agent)."""
    checked: tuple[str, ...] = ("execute", "reflect", "finish")
    nodes: dict[str, Node] = {ask_name: ask, "check": check, "execute": execute,
                              "reflect": reflect_node, "finish": finish}
    after: dict[str, After] = {ask_name: "check", "reflect": ask_name, "finish": None,
                               "execute": (after_execute, ("reflect", "finish"))}
    if asks_again:
        checked = ("execute", "ask_again", "reflect", "finish")
        nodes["ask_again"] = ask_again
        after["ask_again"] = ask_name
    return Graph(ask_name, nodes, {**after, "check": (check_router, checked)}, first_attempts,
                 asks_again)


# By --humanfix-agent.
GRAPHS: dict[str, Graph] = {
    "repair": repair_loop("propose", propose, reflect, after_check),
    "tools": repair_loop("call", call, reflect_call, after_call_check),
    "resample": repair_loop("propose", propose, sample_again, after_check, asks_again=False),
    "rewrite": repair_loop("propose", propose, sample_anew, after_check, asks_again=False,
                           first_attempts=2),
}
