"""The rewriting agent (`--humanfix-agent rewrite`) through both graph runners: its first attempt
is repair's; round 1 a second first attempt, the function written anew from what specifies it,
never shown the buggy code; each later round a fresh sample of the first prompt, as `resample`
draws it."""

from __future__ import annotations

import pytest
from openai_stub import StubServer
from test_agent import (  # noqa: F401 (fixtures)
    TASK_ID, replay, replies, run, statuses, task, tasks)

from pytest_humanfix.agent import prompts
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.routing import GRAPHS
from pytest_humanfix.models.base import sample_seed
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.settings import Settings


def test_round_one_writes_the_function_anew_greedy_and_later_rounds_resample(tmp_path, task,
                                                                             replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.wrong[2],
                                       replies.fixed])
    result, sandbox = run(task, model, agent="rewrite", iters=3, round_temperature=(0.8,))
    assert statuses(result) == ["failed", "failed", "failed", "passed"]
    first, anew, second, third = model.chats
    assert first == second == third == prompts.first_messages(task, "tests")
    assert anew == [{"role": "user", "content": prompts.rewrite_prompt(task, "tests")}]
    # The second first attempt is greedy, as the first; the rounds after it are sampled.
    assert model.temperatures == [0.0, 0.0, 0.8, 0.8]
    assert [a.feedback for a in result.attempts] == ["", "", "", ""]
    assert len(sandbox.programs) == 4
    assert result.outcome == "fixed" and result.fixed_round == 3


def test_the_rewrite_prompt_holds_the_tests_and_no_buggy_code(task):
    prompt = prompts.rewrite_prompt(task, "tests")
    assert prompt.startswith(task.declaration.strip())
    assert task.test.strip() in prompt
    assert task.buggy_solution.strip() not in prompt
    assert prompt.endswith("\nImplement has_close_elements so that it passes the tests.")


def test_in_the_docs_variant_it_holds_the_docstring_and_no_tests(task):
    prompt = prompts.rewrite_prompt(task, "docs")
    assert prompt.startswith(task.prompt.strip())
    assert "def check(" not in prompt and task.buggy_solution.strip() not in prompt
    assert prompt.endswith("\nImplement has_close_elements.")


def test_an_unknown_variant_is_named(task):
    with pytest.raises(ValueError, match="variant must be one of .*'tests', 'docs'.*not 'both'"):
        prompts.rewrite_prompt(task, "both")


def test_a_repeated_or_rejected_reply_costs_its_round_and_is_not_asked_again(tmp_path, task,
                                                                             replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again,
                                       replies.syntax_error, replies.wrong[1]])
    result, sandbox = run(task, model, agent="rewrite", iters=3, ask_again_temperature=(0.6, 1.0))
    assert statuses(result) == ["failed", "repeat", "rejected", "failed"]
    assert [a.round for a in result.attempts] == [0, 1, 2, 3]
    assert result.outcome == "unfixed" and len(sandbox.programs) == 2


def test_its_first_attempts_take_the_run_temperature_and_no_round_value_is_dropped():
    rewrite = RepairConfig.of(Settings(agent="rewrite", temperature=0.1,
                                       round_temperature=(0.5, 0.9)))
    assert GRAPHS["rewrite"].first_attempts == 2
    assert [rewrite.temperature_of(k, first_attempts=2) for k in range(5)] == \
        [0.1, 0.1, 0.5, 0.9, 0.9]
    assert {GRAPHS[agent].first_attempts for agent in GRAPHS if agent != "rewrite"} == {1}


@pytest.mark.parametrize(("agent", "asked"), [
    ("repair", [0.0, 0.3, 0.6, 0.6]),
    ("resample", [0.0, 0.3, 0.6, 0.6]),
    ("rewrite", [0.0, 0.0, 0.3, 0.6]),
])
def test_each_agent_asks_its_k_th_sampled_round_at_the_k_th_round_temperature(
        tmp_path, task, replies, run, agent, asked):
    """One schedule rule for the three agents: the rounds after the first attempts take
    --humanfix-round-temperature in order, whatever the agent's first attempts are."""
    model = replay(tmp_path, TASK_ID, [*replies.wrong, replies.fixed])
    result, _ = run(task, model, agent=agent, iters=3, round_temperature=(0.3, 0.6))
    assert model.temperatures == asked
    assert [a.temperature for a in result.attempts] == asked
    assert result.outcome == "fixed" and result.fixed_round == 3


def test_on_the_wire_its_samples_are_resamples_own(task, run):
    """The greedy round 1 takes no sample's seed, and the round schedule starts after it, so
    rounds 2 and 3 send what `resample`'s rounds 1 and 2 send: the same messages, temperature
    and seed, so the same samples."""
    sent = {}
    for agent in ("rewrite", "resample"):
        with StubServer() as stub:
            config = GenerationConfig.of(Settings(model="openai:m", base_url=stub.base_url,
                                                  seed=7))
            run(task, OpenAIModel("openai:m", "m", config), agent=agent,
                iters=3 if agent == "rewrite" else 2, round_temperature=(0.5, 0.9))
            sent[agent] = stub.posts()
    first, anew, *later = sent["rewrite"]
    assert first == sent["resample"][0]
    assert anew["temperature"] == 0.0 and anew["seed"] == 7
    assert anew["messages"] == [{"role": "user", "content": prompts.rewrite_prompt(task,
                                                                                   "tests")}]
    assert later == sent["resample"][1:]
    assert [post["temperature"] for post in later] == [0.5, 0.9]
    assert [post["seed"] for post in later] == [sample_seed(7, task.task_id, n) for n in (0, 1)]
