"""A reflection agent as a LangGraph graph: draft a fix, test it, and draft again from what
failed, a little hotter each round, as one of the designs this contract answers did.

    pytest --humanfix-model qwen-coder --humanfix-serve \
        --humanfix-agent examples/agents/reflection_graph.py:graph --humanfix-iters 3

The plugin invokes the compiled graph with the documented state, `messages` (the repair prompt
as the first user turn) and `code` (None), and the context as LangGraph's run context: each
node reads it as `runtime.context`. The graph's `code` at its end is the final code.
"""

from __future__ import annotations

import re
from typing import NotRequired, TypedDict

from langgraph.graph import END, START, StateGraph

TEMPERATURE_STEP = 0.3  # added per round: round 0 is greedy


class State(TypedDict):
    messages: list[dict]
    code: str | None
    round: NotRequired[int]
    passed: NotRequired[bool]


def draft(state, runtime):
    ctx, round = runtime.context, state.get("round", 0)
    reply = ctx.model.chat(state["messages"], temperature=min(1.0, TEMPERATURE_STEP * round))
    block = re.search(r"```\w*\n(.*?)(?:```|$)", reply, re.S)
    return {"code": block.group(1) if block else reply,
            "messages": [*state["messages"], {"role": "assistant", "content": reply}]}


def test(state, runtime):
    result = runtime.context.run_tests(state["code"])
    turn = [] if result.passed else [{"role": "user", "content": result.feedback}]
    return {"passed": result.passed, "round": state.get("round", 0) + 1,
            "messages": [*state["messages"], *turn]}


def after_test(state, runtime):
    return END if state["passed"] or state["round"] > runtime.context.rounds else "draft"


graph = (StateGraph(State)
         .add_node("draft", draft).add_node("test", test)
         .add_edge(START, "draft").add_edge("draft", "test")
         .add_conditional_edges("test", after_test, ["draft", END])
         .compile())
