"""What a task's first request is (agent.graph.first_ask): the request the agent's first node
sends, for every built-in agent and every way of prompting, so that a reply asked ahead is the
reply the agent's own request would have had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_doubles import CountingSandbox

from pytest_humanfix.agent.asks import Ask
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.graph import first_ask, repair
from pytest_humanfix.agent.prompts import RUN_TESTS
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.base import Generation
from pytest_humanfix.models.toolcalls import ToolCall
from pytest_humanfix.settings import Settings


class Asked:
    """A model that keeps each request as an Ask, answering each with no code."""

    def __init__(self, prompt: str) -> None:
        self.spec, self.prompt, self.computed_by = "asked", prompt, {}
        self.asks: list[Ask] = []

    def _answer(self, method: str, arguments: dict) -> Generation:
        self.asks.append(Ask(method, arguments))  # type: ignore[arg-type]
        if "tools" in arguments:  # a call whose code is rejected, so that a round follows
            return Generation(text="", tool_calls=[ToolCall("call_1", RUN_TESTS,
                                                            json.dumps({"code": "pass"}))])
        return Generation(text="no code here")

    def generate(self, messages, task, temperature=None, tools=None, stop=None):
        return self._answer("generate", {"messages": messages, "task": task,
                                         "temperature": temperature,
                                         **({"tools": tools} if tools else {"stop": stop})})

    def complete(self, prompt, stop, task, temperature=None):
        return self._answer("complete", {"prompt": prompt, "stop": stop, "task": task,
                                         "temperature": temperature})

    def continue_answer(self, messages, start, stop, task, temperature=None):
        return self._answer("continue_answer", {"messages": messages, "start": start,
                                                "stop": stop, "task": task,
                                                "temperature": temperature})


@pytest.fixture(scope="module")
def task(dataset: Path) -> Task:
    return load_tasks(str(dataset))[3]


# The function-calling agent is prompted by chat only.
@pytest.mark.parametrize(("agent", "prompt"), [
    *((agent, prompt) for agent in ("rewrite", "repair", "resample")
      for prompt in ("chat", "completion", "primed")), ("tools", "chat")])
def test_the_first_ask_is_the_request_the_agent_sends_first(task, agent, prompt):
    # A first attempt's temperature apart from every round's, so that a wrong one shows.
    config = RepairConfig.of(Settings(agent=agent, iters=2, temperature=0.3,
                                      round_temperature=(0.9,), variant="docs"))
    model = Asked(prompt)
    repair(task, model, CountingSandbox(), config, langgraph=False)
    assert len(model.asks) >= 2, "the agent asked again: a later request must not match"
    first = first_ask(task, prompt, config)  # type: ignore[arg-type]
    assert first == model.asks[0]
    assert first.arguments["temperature"] == 0.3
    assert all(later != first for later in model.asks[1:])
