"""The fresh-start agent (`--humanfix-agent fresh-start`) through both graph runners: each round
repairs, and a round whose repair does not pass also asks the first prompt again, from the
buggy code; the next round repairs that fresh candidate."""

from __future__ import annotations

from test_agent import (  # noqa: F401 (fixtures)
    TASK_ID, replay, replies, run, statuses, task, tasks)

from pytest_humanfix.settings import Settings


def test_a_failed_repair_is_followed_in_its_round_by_the_first_prompt(tmp_path, task, replies,
                                                                      run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.fixed])
    result, sandbox = run(task, model, agent="fresh-start", iters=3)
    assert statuses(result) == ["failed", "failed", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 1]
    assert result.outcome == "fixed" and result.fixed_round == 1
    # Round 1's repair is told what round 0 did; its fresh start is told nothing.
    assert len(model.chats[1]) == len(model.chats[0]) + 2
    assert model.chats[2] == model.chats[0]
    assert model.temperatures == [0.0, 1.0, 1.2]
    assert len(sandbox.programs) == 3


def test_the_next_round_repairs_the_fresh_candidate_alone(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.wrong[2],
                                       replies.fixed])
    result, _ = run(task, model, agent="fresh-start", iters=3)
    assert statuses(result) == ["failed", "failed", "failed", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 1, 2]
    first, _repair, _fresh, second_repair = model.chats
    fresh_code = result.attempts[2].code.strip()
    # The conversation starts again from the first prompt: the fresh attempt and what it did,
    # not round 1's repair.
    assert second_repair[:len(first)] == first and len(second_repair) == len(first) + 2
    assert second_repair[len(first)] == {"role": "assistant",
                                         "content": f"```python\n{fresh_code}\n```"}
    assert second_repair[-1]["content"] == result.attempts[2].feedback != ""
    assert result.attempts[1].code.strip() not in str(second_repair)


def test_a_repeated_repair_starts_fresh_instead_of_asking_the_conversation_again(
        tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again, replies.fixed])
    result, sandbox = run(task, model, agent="fresh-start", iters=3,
                          resample_temperature=(0.9,))
    assert statuses(result) == ["failed", "repeat", "passed"]
    assert model.chats[2] == model.chats[0]
    assert model.temperatures == [0.0, 1.0, 0.9]
    assert len(sandbox.programs) == 2  # the repeat is not run


def test_the_last_round_starts_fresh_too_and_the_replies_stay_within_the_budget(
        tmp_path, task, replies, run):
    rows = [replies.wrong[0], replies.wrong[1], replies.wrong[2], replies.examples_only,
            replies.syntax_error, replies.fixed]
    model = replay(tmp_path, TASK_ID, rows)
    result, _ = run(task, model, agent="fresh-start", iters=2)
    assert statuses(result) == ["failed", "failed", "failed", "failed", "rejected"]
    assert [a.round for a in result.attempts] == [0, 1, 1, 2, 2]
    assert len(model.chats) == Settings(agent="fresh-start", iters=2).most_replies == 5
    assert result.outcome == "unfixed"


def test_without_resample_temperatures_it_is_repair_without_asks_again(tmp_path, task, replies,
                                                                       run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.fixed])
    result, _ = run(task, model, agent="fresh-start", iters=3, resample_temperature=())
    assert statuses(result) == ["failed", "failed", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 2]
    # Round 2 refines round 1 in the same conversation, as repair does.
    assert len(model.chats[2]) == len(model.chats[1]) + 2
