"""The resampling agent (`--humanfix-agent resample`) through both graph runners: its first
attempt is repair's, each later round a fresh sample of the first prompt, told nothing."""

from __future__ import annotations

import json

import pytest
from openai_stub import StubServer
from test_agent import (  # noqa: F401 (fixtures)
    TASK_ID, replay, replies, run, statuses, task, tasks)

from pytest_humanfix.models.base import sample_seed
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.reporting.rates import task_cost
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.settings import Settings


def test_later_rounds_are_the_first_prompt_sampled_hotter_and_told_nothing(tmp_path, task,
                                                                          replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.fixed])
    result, sandbox = run(task, model, agent="resample", iters=3, round_temperature=(0.8,))
    assert statuses(result) == ["failed", "failed", "passed"]
    assert model.chats[0] == model.chats[1] == model.chats[2]
    assert model.temperatures == [0.0, 0.8, 0.8]
    assert [a.temperature for a in result.attempts] == [0.0, 0.8, 0.8]
    assert [a.feedback for a in result.attempts] == ["", "", ""]
    assert len(sandbox.programs) == 3


def test_the_first_attempt_is_repairs_byte_for_byte(tmp_path, task, replies, run):
    asked = {}
    for agent in ("repair", "resample"):
        (tmp_path / agent).mkdir()
        model = replay(tmp_path / agent, TASK_ID, [replies.wrong[0], replies.fixed])
        run(task, model, agent=agent, iters=1)
        asked[agent] = model
    assert asked["resample"].chats[0] == asked["repair"].chats[0]
    assert asked["resample"].temperatures[0] == asked["repair"].temperatures[0] == 0.0
    assert asked["resample"].stops[0] == asked["repair"].stops[0]
    # Where the two part: repair tells the model what its first attempt did.
    assert asked["repair"].chats[1] != asked["repair"].chats[0]
    assert asked["resample"].chats[1] == asked["resample"].chats[0]


@pytest.mark.parametrize("agent", ["repair", "resample"])
def test_it_stops_at_the_first_pass_and_counts_rounds_as_repair(tmp_path, task, replies, run,
                                                                 agent):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong[1], replies.fixed,
                                       replies.wrong[2]])
    result, _ = run(task, model, agent=agent, iters=3)
    assert statuses(result) == ["failed", "failed", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 2]
    assert result.outcome == "fixed" and result.fixed_round == 2
    assert len(model.chats) == 3


def test_a_repeated_or_rejected_sample_costs_its_round_and_is_not_asked_again(tmp_path, task,
                                                                              replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again,
                                       replies.syntax_error, replies.wrong[1]])
    result, sandbox = run(task, model, agent="resample", iters=3,
                          ask_again_temperature=(0.6, 1.0))
    assert statuses(result) == ["failed", "repeat", "rejected", "failed"]
    assert [a.round for a in result.attempts] == [0, 1, 2, 3]
    assert [a.feedback for a in result.attempts] == ["", "", "", ""]
    assert result.outcome == "unfixed"
    # The repeat is not run again; the last sample is graded where it ran.
    assert len(sandbox.programs) == 2


def test_the_requests_are_greedy_then_seeded_per_round(task, run):
    """On the wire: the first request is the greedy one repair sends, with the run's seed; each
    later one the same messages at the round temperature, with a seed of its own that a rerun
    draws again."""
    sent = []
    for _ in range(2):
        with StubServer() as stub:
            config = GenerationConfig.of(Settings(model="openai:m", base_url=stub.base_url,
                                                  seed=7))
            run(task, OpenAIModel("openai:m", "m", config), agent="resample", iters=2,
                round_temperature=(0.8,))
            sent.append(stub.posts())
    first, *later = sent[0]
    assert first["temperature"] == 0.0 and first["seed"] == 7
    assert [post["messages"] for post in later] == [first["messages"]] * 2
    assert [post["temperature"] for post in later] == [0.8, 0.8]
    assert [post["seed"] for post in later] == [sample_seed(7, task.task_id, n) for n in (0, 1)]
    assert sent[1] == sent[0]


def test_the_record_counts_the_replies_and_the_sandbox_runs(tmp_path, tasks, dataset, replies):
    """Through the Runner: the programs the task ran (the check's rejects and repeats run
    none) and the replies, in the record and its cost."""
    path = tmp_path / "replies.jsonl"
    rows = [replies.wrong[0], replies.wrong_again, replies.syntax_error, replies.fixed]
    path.write_text("".join(json.dumps({"task_id": TASK_ID, "completion": c}) + "\n"
                            for c in rows))
    runner = Runner(Settings(model=f"replay:{path}", dataset=str(dataset), iters=3,
                             agent="resample"), RunState("run-resample"))
    record = json.loads(json.dumps(runner.record(runner.evaluate(tasks[TASK_ID]))))
    assert record["protocol"]["agent"] == "resample" and record["outcome"] == "fixed"
    assert record["replies"] == 4
    # The failed and the passing sample ran; grading reuses the passing run. The sandbox
    # also checks the reference solution once, to calibrate the task's limit, off its count.
    assert record["sandbox_runs"] == 2
    assert task_cost(record)["replies"] == 4
