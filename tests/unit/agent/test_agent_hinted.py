"""The hinted agent (`--humanfix-agent hinted`) through both graph runners: its first attempt is
repair's, each later round a fresh sample, as `resample` draws, of the first prompt told how the
buggy code fails."""

from __future__ import annotations

import pytest
from test_agent import (  # noqa: F401 (fixtures)
    TASK_ID, replay, replies, run, statuses, task, tasks)

from pytest_humanfix.agent import prompts


def test_later_rounds_are_the_first_prompt_told_how_the_buggy_code_fails(tmp_path, task,
                                                                       replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.fixed])
    result, sandbox = run(task, model, agent="hinted", iters=3, round_temperature=(0.8,))
    assert statuses(result) == ["failed", "failed", "passed"]
    first, second, third = model.chats
    assert first == prompts.first_messages(task, "tests")
    assert second == third and len(second) == 1 and second[0]["role"] == "user"
    hinted = second[0]["content"]
    # The buggy code's own failure (has_close_elements lacks its abs()), put between the
    # tests and the instruction; nothing of the failed attempts.
    assert hinted.startswith(first[0]["content"].removesuffix(prompts.instruction(task)))
    assert hinted.endswith("\nFix bugs in has_close_elements.")
    assert "\nhas_close_elements fails the tests:\n" \
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n" \
        "assert True == False\n" \
        " +  where True = has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05)\n" \
        "Fix bugs in has_close_elements." in hinted
    assert result.attempts[0].code.strip() not in hinted
    assert model.temperatures == [0.0, 0.8, 0.8]
    assert [a.feedback for a in result.attempts] == ["", "", ""]
    # The buggy code ran once, before round 1, besides the three attempts.
    assert len(sandbox.programs) == 4
    assert result.outcome == "fixed" and result.fixed_round == 2


def test_a_fixed_first_attempt_runs_no_buggy_code(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.fixed])
    result, sandbox = run(task, model, agent="hinted", iters=3)
    assert statuses(result) == ["passed"] and len(sandbox.programs) == 1


@pytest.mark.parametrize("failure", ["", "  \n"])
def test_with_nothing_to_tell_the_prompt_is_the_first_one(task, failure):
    assert prompts.hinted_prompt(task, "tests", failure) == prompts.first_prompt(task, "tests")


def test_the_docs_variant_tells_the_examples(task):
    told = prompts.hinted_prompt(task, "docs", "assert x == 1")
    assert "has_close_elements fails the examples from the docstring:\nassert x == 1\n" \
           "Fix bugs in has_close_elements." in told
