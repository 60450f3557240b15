"""The contract of a brought agent (agent/contract): what its context shows and allows, how
its chats and runs become the attempts of the record, and how each way it goes wrong is
scored, with the canonical and buggy controls as the model. Whole runs: runs/test_own_agent.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_doubles import CountingSandbox, fenced

from pytest_humanfix.agent.contract import ContractBroken, TaskView, run_agent
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.settings import Settings

IDENTITY = "agents.py:fix"


@pytest.fixture(scope="module")
def task(dataset: Path) -> Task:
    return load_tasks(str(dataset))[0]  # Python/0


def run(agent, task: Task, model: str = "canonical", sandbox=None, **settings):
    config = Settings(model=model, agent=IDENTITY, **settings)
    loads: list[str] = []

    def load():
        loads.append(model)
        return load_model(model, GenerationConfig.of(config))

    result = run_agent(agent, IDENTITY, task, load, sandbox or CountingSandbox(), config)
    return result, loads


def test_the_task_view_hides_the_tests_in_the_docs_variant(task):
    tests, docs = TaskView.of(task, "tests"), TaskView.of(task, "docs")
    assert tests.tests == task.test and docs.tests is None
    assert tests.buggy_code == task.buggy_code and tests.fence == "python"
    assert tests.instruction == "Fix bugs in has_close_elements."
    assert tests.prompt != docs.prompt and docs.prompt_base != tests.prompt_base


def test_code_the_agent_returns_without_running_it_is_graded(task):
    result, loads = run(lambda ctx: task.canonical_code, task)
    assert result.outcome == "fixed" and loads == []  # never asked: the model is not loaded
    assert [a.status for a in result.attempts] == ["graded"]
    assert result.final_attempt == 0 and result.fixed_round == 0 and result.seconds > 0


def test_a_chat_and_its_run_are_one_attempt_with_the_run_told(task):
    said: list[object] = []

    def agent(ctx):
        reply = ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
        code = reply.split("```python\n")[1].split("```")[0]
        said.append(ctx.run_tests(code))
        return code

    result, loads = run(agent, task, model="buggy", iters=1)
    [ran] = said
    assert (ran.passed, ran.status, ran.tests, ran.attempt) == (False, "failed", "test", 1)
    assert ran.feedback.startswith("Your code does not pass the tests:")
    assert ran.failure.startswith("assert has_close_elements(")
    assert result.outcome == "unfixed" and loads == ["buggy"]
    [made] = result.attempts
    assert made.reply == fenced(task.buggy_code) and made.status == "failed"
    assert made.feedback == ran.feedback and made.prompt == "chat" and made.round == 0


def test_a_run_of_code_that_failed_before_is_a_repeat_told_so(task):
    results = []

    def agent(ctx):
        results.extend([ctx.run_tests(task.buggy_code), ctx.run_tests(task.buggy_code)])
        return None

    result, _ = run(agent, task, iters=1)
    assert [r.status for r in results] == ["failed", "repeat"]
    assert results[1].failure == results[0].failure and results[1].attempt == 2
    assert result.outcome == "unfixed"
    assert result.failure == f"{IDENTITY} gave up (it returned None)."
    assert [a.status for a in result.attempts] == ["failed", "repeat"]


def test_code_that_fails_the_check_is_rejected_unrun(task):
    def agent(ctx):
        found = ctx.run_tests("def has_close_elements(numbers)\n    return 1\n")
        assert (found.status, found.tests) == ("rejected", "")
        assert found.failure.startswith("syntax error at line 1")
        return task.canonical_code

    result, _ = run(agent, task, iters=1)
    assert result.outcome == "fixed" and [a.status for a in result.attempts] == ["rejected",
                                                                                  "graded"]


def test_running_past_the_rounds_breaks_the_contract_even_if_caught(task):
    def agent(ctx):
        for _ in range(ctx.rounds + 2):
            try:
                ctx.run_tests(task.buggy_code)
            except ContractBroken:
                pass
        return task.canonical_code

    result, _ = run(agent, task, iters=1)
    assert result.outcome == "unfixed"
    assert result.failure.startswith(f"{IDENTITY} called run_tests 3 times, and "
                                     "--humanfix-iters 1 allows 2")
    assert "raise --humanfix-iters" in result.failure


def test_what_the_agent_raises_is_its_failure_with_its_own_traceback(task):
    def agent(ctx):
        raise KeyError("the plan")

    result, _ = run(agent, task)
    first, *rest = result.failure.splitlines()
    assert first == f"{IDENTITY} raised KeyError: 'the plan'"
    assert any("in agent" in line for line in rest)
    assert not any("pytest_humanfix/agent/contract.py" in line for line in rest)


def test_code_of_another_type_says_what_to_return(task):
    result, _ = run(lambda ctx: 42, task)
    assert result.outcome == "unfixed"
    assert result.failure == (f"{IDENTITY} returned a int, not the final code: return the code "
                              "as a str, or None to give up.")


def test_a_call_of_the_wrong_shape_names_the_right_one(task):
    result, loads = run(lambda ctx: ctx.model.chat("fix it"), task)
    assert "ValueError: ctx.model.chat takes a non-empty list of OpenAI-style messages" \
        in result.failure and loads == []
    result, _ = run(lambda ctx: ctx.run_tests(b"code"), task)
    assert "TypeError: ctx.run_tests takes the code as a str, not bytes" in result.failure
    assert result.attempts == []


def test_a_model_fault_is_raised_whatever_the_agent_made_of_it(task):
    def agent(ctx):
        try:
            ctx.model.chat([{"role": "user", "content": "fix"}])
        except Exception:
            return task.canonical_code
        return None

    def broken():
        raise ConnectionError("server gone")

    with pytest.raises(ConnectionError, match="server gone"):
        run_agent(agent, IDENTITY, task, broken, CountingSandbox(),
                  Settings(model="m", agent=IDENTITY))


def test_a_reply_from_the_agents_own_model_is_recorded_as_an_attempt(task):
    def agent(ctx):
        ctx.model.record("my model said so", prompt_tokens=5, completion_tokens=3,
                         seconds=0.5, engine="mine")
        return task.canonical_code

    result, loads = run(agent, task, temperature=0.2)
    [made] = result.attempts
    assert loads == [] and made.reply == "my model said so" and made.engine == "mine"
    assert (made.prompt_tokens, made.completion_tokens, made.temperature) == (5, 3, 0.2)
    # The final code was put on the reply it answers, which is the graded attempt.
    assert made.code == task.canonical_code and made.status == "graded"


class Graph:
    """A compiled graph, as the loader tells one: invoke and get_graph."""

    def __init__(self, final: dict) -> None:
        self.final = final
        self.invoked: list[tuple[dict, object]] = []

    def invoke(self, state, context=None):
        self.invoked.append((state, context))
        return self.final

    def get_graph(self):
        return None


def test_a_graph_gets_the_first_turn_and_its_states_code_is_the_answer(task):
    graph = Graph({"code": task.canonical_code})
    result, _ = run(graph, task)
    [(state, ctx)] = graph.invoked
    assert state == {"messages": [{"role": "user", "content": ctx.task.prompt}], "code": None}
    assert result.outcome == "fixed"


def test_a_graph_that_ends_without_a_code_says_to_add_one(task):
    result, _ = run(Graph({"messages": []}), task)
    assert result.outcome == "unfixed"
    assert result.failure == (f"{IDENTITY} ended without a `code` in its state: give the "
                              "graph's state a code key, set to the final code (or None).")
