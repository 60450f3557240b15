"""The repair agent's nodes (agent/nodes), each called on its own with a state and the
runtime: what it asks, what it reads from the reply, what it decides and what it tells the
model. The graph that joins them: test_agent.py; its routing: test_repair_config.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from agent_doubles import CountingSandbox, Replies

from pytest_humanfix.agent import nodes, prompts
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.context import PlainRuntime, RepairContext, RepairState
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.base import Generation
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.models.toolcalls import ToolCall
from pytest_humanfix.records import Attempt
from pytest_humanfix.settings import Settings


@pytest.fixture(scope="module")
def task(dataset: Path) -> Task:
    return load_tasks(str(dataset))[0]  # Python/0: the bug is a missing abs()


def runtime(task: Task, model: str = "canonical", sandbox=None, **settings) -> PlainRuntime:
    config = Settings(model=model, **settings)
    return PlainRuntime(RepairContext(
        task=task, model=load_model(model, GenerationConfig.of(config)),
        sandbox=sandbox or CountingSandbox(), config=RepairConfig.of(config)))


def state(task: Task, *attempts: Attempt, rounds_left: int = 1, resamples: int = 0,
          round: int = 0) -> RepairState:
    return {"messages": prompts.first_messages(task, "tests"), "attempts": list(attempts),
            "rounds_left": rounds_left, "round": round, "resamples": resamples, "result": None}


def attempt(code: str, status: str = "", **fields) -> Attempt:
    return Attempt(code=code, diff="", verdict=fields.pop("verdict", None), status=status,  # type: ignore[arg-type]
                   **fields)


def test_the_diff_is_of_the_buggy_code_against_the_candidate():
    diff = nodes.unified_diff("a\nb\n", "a\nc\n")
    assert diff.splitlines() == ["--- buggy", "+++ candidate", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]
    assert nodes.unified_diff("same\n", "same\n") == ""


def test_a_replys_attempt_keeps_what_it_said_and_cost_before_any_code():
    generation = Generation(text="I would call it.", prompt_tokens=30, completion_tokens=7,
                            seconds=1.23456, finish_reason="length", engine="llama.cpp",
                            server="http://s",
                            tool_calls=[ToolCall("c1", "run_tests", '{"code": "x"}')])
    made = nodes.reply_attempt(generation, "chat", 2, 0.7, began=0.0, tool_calls=1)
    assert (made.code, made.diff, made.verdict, made.status) == ("", "", None, "")
    assert (made.prompt_tokens, made.completion_tokens, made.generate_seconds) == (30, 7, 1.2346)
    assert (made.finish_reason, made.engine, made.server) == ("length", "llama.cpp", "http://s")
    assert (made.round, made.temperature, made.tool_calls, made.prompt) == (2, 0.7, 1, "chat")
    # The reply is what was said, the calls written after it: a replay calls them again.
    assert made.reply.startswith("I would call it.") and '"run_tests"' in made.reply
    # A generation that did not time itself is timed from when it was asked.
    untimed = nodes.reply_attempt(Generation(text=""), "chat", 0, 0.0, time.monotonic() - 2)
    assert untimed.generate_seconds >= 2


def test_propose_appends_the_replys_code_and_counts_its_round(task):
    update = nodes.propose(state(task, rounds_left=2), runtime(task))
    [made] = update["attempts"]
    assert made.code.strip() == task.canonical_code.strip() and made.round == 0
    assert made.diff.startswith("--- buggy") and "abs(" in made.diff
    assert update["rounds_left"] == 1 and made.temperature == 0.0


def test_an_ask_again_belongs_to_the_round_it_repeats(task):
    earlier = attempt(task.buggy_code, "repeat", repeat_of=1)
    update = nodes.propose(state(task, earlier, rounds_left=1, resamples=1, round=1),
                           runtime(task, iters=1, ask_again_temperature=(1.5,)))
    assert update["rounds_left"] == 1
    assert update["attempts"][-1].temperature == 1.5 and update["attempts"][-1].round == 1


def test_a_completion_model_continues_the_prompt_base(task):
    update = nodes.propose(state(task), runtime(task, prompt="completion"))
    made = update["attempts"][-1]
    assert made.prompt == "completion" and made.code.strip() == task.canonical_code.strip()


def test_call_takes_the_code_of_the_first_call_and_counts_the_calls(task):
    update = nodes.call(state(task), runtime(task, agent="tools"))
    made = update["attempts"][-1]
    assert made.tool_calls == 1 and made.code.strip() == task.canonical_code.strip()


def fenced_code(reply: str) -> str:
    return reply.split("```python\n")[1].split("```")[0]


def test_check_rejects_a_reply_without_code_or_that_cannot_run_saying_why(task):
    replies = Replies(task)
    run = runtime(task)
    for code, reason in [
            ("", "the reply holds no code."),
            # A completion that added nothing to the prompt base.
            (run.context.base.rstrip() + "\n", "the reply holds no code."),
            (fenced_code(replies.syntax_error),
             "syntax error at line 1: expected ':': `def has_close_elements(numbers, threshold)`"),
            (fenced_code(replies.bad_signature),
             "`has_close_elements(numbers)` does not match the declared parameters "
             "`has_close_elements(numbers: List[float], threshold: float)`.")]:
        update = nodes.check(state(task, attempt(code)), run)
        assert (update["attempts"][-1].status, update["attempts"][-1].check) == ("rejected",
                                                                                  reason)


def test_check_finds_a_repeat_of_code_that_ran_and_lets_new_code_through(task):
    failed = attempt(task.buggy_code, "failed")
    laid_out_again = task.buggy_code.replace("distance = elem - elem2",
                                             "distance = (elem - elem2)  # the same")
    update = nodes.check(state(task, failed, attempt(laid_out_again)), runtime(task))
    assert (update["attempts"][-1].status, update["attempts"][-1].repeat_of) == ("repeat", 1)
    # Code that was rejected earlier is no run to repeat.
    assert nodes.check(state(task, attempt(task.buggy_code, "rejected"),
                             attempt(task.buggy_code)), runtime(task)) == {}


def test_execute_runs_the_hidden_tests_guarded_in_the_tests_variant(task):
    sandbox = CountingSandbox()
    update = nodes.execute(state(task, attempt(task.buggy_code)), runtime(task, sandbox=sandbox))
    made = update["attempts"][-1]
    assert (made.status, made.tests, made.guard) == ("failed", "test", "")
    assert made.verdict["status"] == "failed" and made.execute_seconds > 0
    assert len(sandbox.guarded) == 1


def test_execute_runs_only_the_docstrings_examples_in_the_docs_variant(task):
    sandbox = CountingSandbox()
    update = nodes.execute(state(task, attempt(task.canonical_code)),
                           runtime(task, sandbox=sandbox, variant="docs"))
    made = update["attempts"][-1]
    assert (made.status, made.tests, made.guard) == ("passed", "example_test", None)
    assert sandbox.guarded == [] and task.test not in sandbox.programs[0]


def test_ask_again_asks_within_the_round(task):
    assert nodes.ask_again(state(task, resamples=1), runtime(task)) == {"resamples": 2}


def failed_run(task: Task) -> Attempt:
    return nodes.execute(state(task, attempt(task.buggy_code)), runtime(task))["attempts"][-1]


def test_told_says_why_a_reply_was_not_run_or_that_it_repeats_or_how_it_failed(task):
    ctx = runtime(task).context
    rejected = attempt("", "rejected", check="the reply holds no code.")
    assert nodes.told(ctx, [rejected], "chat").startswith(
        "Your code was not run: the reply holds no code.")
    failed = failed_run(task)
    repeat = nodes.told(ctx, [failed, attempt(task.buggy_code, "repeat", repeat_of=1)], "chat")
    assert repeat.startswith("Your code is the same as your attempt 1, which did not fix the "
                             "bug; it failed with:\nassert has_close_elements(")
    told = nodes.told(ctx, [failed], "chat")
    assert told.startswith("Your code does not pass the tests:\nassert has_close_elements(")


def test_reflect_tells_the_model_and_opens_the_next_round(task):
    failed = failed_run(task)
    update = nodes.reflect(state(task, failed, resamples=1), runtime(task))
    assistant, user = update["messages"][-2:]
    assert assistant == {"role": "assistant",
                         "content": f"```python\n{task.buggy_code.strip()}\n```"}
    assert user["role"] == "user" and user["content"] == update["attempts"][-1].feedback
    assert (update["round"], update["resamples"]) == (1, 0)


def test_reflect_call_answers_the_call_with_what_its_code_did(task):
    rejected = attempt("  x = (\n", "rejected", check="a syntax error on line 1.")
    update = nodes.reflect_call(state(task, attempt(task.buggy_code, "failed"), rejected),
                                runtime(task, agent="tools"))
    call, answer = update["messages"][-2:]
    [made] = call["tool_calls"]
    assert made["id"] == answer["tool_call_id"] == "call_2"
    assert made["function"]["name"] == prompts.RUN_TESTS
    assert json.loads(made["function"]["arguments"]) == {"code": "x = ("}
    assert answer["content"].startswith("Not run: a syntax error on line 1.")
    assert update["attempts"][-1].feedback == answer["content"] and update["round"] == 1


def test_finish_grades_the_final_candidate(task):
    update = nodes.finish(state(task, attempt(task.canonical_code),
                                attempt("", "rejected", check="no code")), runtime(task))
    assert update["result"].outcome == "fixed" and update["result"].final_attempt == 0
    assert update["attempts"] == update["result"].attempts
    assert update["attempts"][0].status == "graded"
