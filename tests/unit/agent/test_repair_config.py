"""The repair's config (what the graph reads of the settings), its temperature schedule, and
the graph's routing decisions, without a model or a sandbox."""

from __future__ import annotations

import dataclasses
import types

import pytest

from pytest_humanfix import protocol
from pytest_humanfix.agent import nodes
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.context import PlainRuntime
from pytest_humanfix.agent.graph import recursion_limit, repair_context
from pytest_humanfix.agent.routing import GRAPHS, after_call_check, after_check, after_execute
from pytest_humanfix.records import Attempt
from pytest_humanfix.settings import BUILT_IN_AGENTS, Settings


def config(**settings: object) -> RepairConfig:
    return RepairConfig.of(Settings(**settings))  # type: ignore[arg-type]


def test_each_field_is_the_settings_field_of_its_name():
    settings = Settings(variant="docs", agent="tools", iters=3, temperature=0.2,
                        round_temperature=(0.5, 0.9), ask_again_temperature=(), chat_stop="none",
                        strict=True)
    repair = RepairConfig.of(settings)
    for field in dataclasses.fields(RepairConfig):
        assert getattr(repair, field.name) == getattr(settings, field.name)
    assert repair.resamples == 0


def test_the_first_attempt_keeps_the_run_temperature_and_rounds_follow_the_schedule():
    repair = config(temperature=0.1, round_temperature=(0.5, 0.9),
                    ask_again_temperature=(1.2, 1.5))
    assert [repair.temperature_of(k) for k in range(4)] == [0.1, 0.5, 0.9, 0.9]
    assert [repair.temperature_of(2, ask) for ask in (1, 2)] == [1.2, 1.5]


@pytest.mark.parametrize(("agent", "first_attempts"), [
    ("repair", 1), ("tools", 1), ("resample", 1), ("rewrite", 2)])
def test_every_agent_takes_the_schedule_from_its_first_round_after_the_first_attempts(
        agent, first_attempts):
    """One rule: the k-th round after the first attempts takes the k-th value, so no value is
    dropped for `rewrite`, whose round 1 is a second first attempt."""
    rounds = config(agent=agent, temperature=0.1, round_temperature=(0.3, 0.6, 0.9))
    ctx = repair_context(None, None, None, rounds)  # type: ignore[arg-type]
    assert ctx.first_attempts == GRAPHS[agent].first_attempts == first_attempts
    temperatures = [ctx.temperature({"round": k, "resamples": 0})  # type: ignore[typeddict-item]
                    for k in range(first_attempts + 4)]
    assert temperatures == [0.1] * first_attempts + [0.3, 0.6, 0.9, 0.9]


def test_an_empty_round_schedule_keeps_the_run_temperature():
    assert config(temperature=0.3, round_temperature=()).temperature_of(5) == 0.3


def routed(router, attempts, repair: RepairConfig, rounds_left=1, resamples=0,
           example_test="assert f(1) == 1"):
    task = types.SimpleNamespace(test="check(f)", example_test=example_test)
    runtime = PlainRuntime(repair_context(task, None, None, repair))  # type: ignore[arg-type]
    state = {"messages": [], "attempts": attempts, "rounds_left": rounds_left, "round": 0,
             "resamples": resamples, "result": None}
    return router(state, runtime)


def attempt(status: str, tool_calls: int | None = None) -> Attempt:
    return Attempt(code="def f(): pass", diff="", verdict=None, status=status,  # type: ignore
                   tool_calls=tool_calls)


@pytest.mark.parametrize(("status", "rounds_left", "resamples", "expected"), [
    ("repeat", 1, 0, "ask_again"),      # a repeat is asked again while the round has asks left
    ("repeat", 1, 1, "reflect"),       # then it costs its round
    ("repeat", 0, 1, "finish"),
    ("rejected", 1, 0, "reflect"),
    ("rejected", 0, 0, "finish"),
    ("", 0, 0, "execute"),             # the hidden tests run even without a round left
])
def test_after_the_check(status, rounds_left, resamples, expected):
    asks_again = config(agent="repair", ask_again_temperature=(1.2,))
    assert routed(after_check, [attempt(status)], asks_again, rounds_left, resamples) == expected


def test_in_docs_the_examples_run_only_where_a_round_can_act_on_them():
    docs = config(variant="docs")
    assert routed(after_check, [attempt("")], docs, rounds_left=1) == "execute"
    assert routed(after_check, [attempt("")], docs, rounds_left=0) == "finish"
    assert routed(after_check, [attempt("")], docs, example_test="") == "finish"


def test_a_reply_without_a_call_ends_the_tools_agent():
    tools = config(agent="tools")
    assert routed(after_call_check, [attempt("", tool_calls=0)], tools) == "finish"
    assert routed(after_call_check, [attempt("", tool_calls=1)], tools) == "execute"


@pytest.mark.parametrize(("status", "rounds_left", "expected"), [
    ("passed", 1, "finish"), ("failed", 1, "reflect"), ("failed", 0, "finish")])
def test_after_execute(status, rounds_left, expected):
    assert routed(after_execute, [attempt(status)], config(), rounds_left) == expected


@pytest.mark.parametrize("agent", sorted(GRAPHS))
def test_each_graph_goes_only_to_its_own_nodes_and_ends_at_finish(agent):
    graph = GRAPHS[agent]
    assert graph.first in graph.nodes and set(graph.next) == set(graph.nodes)
    for after in graph.next.values():
        targets = [] if after is None else [after] if isinstance(after, str) else after[1]
        assert set(targets) <= set(graph.nodes)
    assert [name for name, after in graph.next.items() if after is None] == ["finish"]


def test_the_agents_named_without_the_graphs_are_the_graphs():
    """The settings and the protocol name the built-in agents without importing the agent
    package (no heavy import at plugin import time): their lists are what GRAPHS holds, and
    the agents read as `repair`'s in a pass@1 run are those whose graph starts at `propose`,
    `repair`'s first attempt."""
    assert BUILT_IN_AGENTS == tuple(GRAPHS)
    assert protocol.FIRST_ATTEMPT_OF_REPAIR == tuple(
        name for name, graph in GRAPHS.items() if graph.nodes[graph.first] is nodes.propose)


@pytest.mark.parametrize("agent", ["resample", "rewrite"])
def test_the_sampling_agents_never_ask_a_repeat_again_and_have_no_node_for_it(agent):
    # Asks are left (an ask-again temperature, none spent), which repair spends.
    asks_left = config(agent=agent, ask_again_temperature=(1.2,))
    assert routed(after_check, [attempt("repeat")], asks_left) == "reflect"
    assert routed(after_check, [attempt("repeat")], asks_left, rounds_left=0) == "finish"
    assert routed(after_check, [attempt("repeat")],
                  dataclasses.replace(asks_left, agent="repair")) == "ask_again"
    assert set(GRAPHS[agent].nodes) == {"propose", "check", "execute", "reflect", "finish"}
    assert "ask_again" in GRAPHS["repair"].nodes and "ask_again" in GRAPHS["tools"].nodes


def test_the_step_limit_grows_with_rounds_and_asks_again():
    assert recursion_limit(0) < recursion_limit(1) < recursion_limit(1, resamples=1)
