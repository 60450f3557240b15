"""The agent and the item timeout through pytest itself (pytester runs, some under xdist)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.session.timeouts import HARNESS_SECONDS, item_timeout
from pytest_humanfix.settings import Settings

LOOPING_TASK = "Python/10"  # its buggy solution never returns


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


@pytest.fixture
def replay_file(humanfix_pytester: pytest.Pytester, dataset: Path) -> Path:
    """Python/0 is fixed at the second reply; Python/2 never (the buggy code three times)."""
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    fixed, buggy = tasks["Python/0"].canonical_code, tasks["Python/0"].buggy_code
    wrong = buggy.replace("elem - elem2", "elem - elem2 - 1")
    rows = [("Python/0", wrong), ("Python/0", fixed), ("Python/0", fixed),
            *[("Python/2", tasks["Python/2"].buggy_code)] * 3]
    path = humanfix_pytester.path / "replies.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "completion": fenced(c)}) + "\n"
                            for t, c in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("variant", ["tests", "docs"])
def test_replay_run_records_trajectory_and_protocol(humanfix_pytester, replay_file, variant,
                                                    records_by_task):
    result = humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{replay_file}", "--humanfix-task=Python/0,Python/2",
        # Repair's rounds (told, asked again), named: they hold whatever the default agent.
        "--humanfix-iters=2", "--humanfix-agent=repair", f"--humanfix-variant={variant}",
        *(["-n", "2"] if variant == "tests" else []))  # one run crosses xdist, one does not
    result.assert_outcomes(passed=1, failed=1)
    protocol = f"variant={variant} iters=2 samples=1 temperature=0.0 max_new_tokens=512"
    line = (f"pass@1 = 50.0% (1/2) = 0.5000  [{protocol} timeout=10.0 prompt=auto strict=False "
            "language=python chat_stop=code round_temperature=[1.0] ask_again_temperature=[1.2]]")
    assert line in result.outlines
    got = records_by_task()
    for record in got.values():
        assert record["protocol"] == {"variant": variant, "iters": 2, "samples": 1,
                                      "temperature": 0.0, "max_new_tokens": 512, "timeout": 10.0,
                                      "prompt": "auto", "strict": False, "language": "python",
                                      "chat_stop": "code", "round_temperature": [1.0],
                                      "ask_again_temperature": [1.2]}
        assert {(a["prompt"], a["engine"], a["finish_reason"]) for a in record["attempts"]} \
            == {("chat", "replay", "stop")}
    fixed, unfixed = got["Python/0"], got["Python/2"]
    assert fixed["outcome"] == "fixed"
    assert [a["status"] for a in fixed["attempts"]] == ["failed", "passed"]
    assert (fixed["fixed_round"], unfixed["fixed_round"]) == (1, None)  # xdist carries it too
    assert fixed["attempts"][0]["feedback"] and fixed["attempts"][0]["diff"]
    # The buggy code every time: executed once; in each round asked again at the resample
    # temperature, then the round is spent (docs: on the examples).
    assert unfixed["outcome"] == "unfixed"
    assert [a["status"] for a in unfixed["attempts"]] == ["failed", *["repeat"] * 4]
    assert [a["round"] for a in unfixed["attempts"]] == [0, 1, 1, 2, 2]
    assert [a["temperature"] for a in unfixed["attempts"]] == [0.0, *[1.0, 1.2] * 2]
    expected_tests = "test" if variant == "tests" else "example_test"
    assert unfixed["attempts"][0]["tests"] == expected_tests


def test_the_former_name_of_the_ask_again_schedule_works_and_warns(humanfix_pytester,
                                                                  replay_file, read_records):
    result = humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{replay_file}", "--humanfix-task=Python/0",
        "--humanfix-agent=repair", "--humanfix-iters=2", "--humanfix-resample-temperature=0.6")
    result.assert_outcomes(passed=1)
    [record] = read_records()
    assert record["protocol"]["ask_again_temperature"] == [0.6]
    assert "resample_temperature" not in record["protocol"]
    result.stdout.fnmatch_lines(["*PytestDeprecationWarning: --humanfix-resample-temperature "
                                 "/ humanfix_resample_temperature is deprecated: it is now "
                                 "--humanfix-ask-again-temperature*"])


def test_item_timeout_is_an_error_with_a_record(humanfix_pytester, records_by_task):
    result = humanfix_pytester.runpytest(
        "--humanfix-model=buggy", f"--humanfix-task=Python/0,{LOOPING_TASK}",
        "--humanfix-timeout=60", "--humanfix-item-timeout=5")
    result.assert_outcomes(failed=1, errors=1)
    got = records_by_task()
    assert got["Python/0"]["outcome"] == "unfixed"
    timed_out = got[LOOPING_TASK]
    assert timed_out["outcome"] == "error" and "item timeout fired" in timed_out["error"]
    assert "Timeout (>5.0s)" in timed_out["error"] and timed_out["item_timeout"]
    # Counted apart from harness errors (tests/unit/models/test_protocol.py has the rest).
    result.stdout.fnmatch_lines(["*fixed 0, not fixed 1, errors 0 *, item timeouts 1 *"])


def test_users_timeout_wins_over_the_item_timeout(humanfix_pytester, records_by_task):
    result = humanfix_pytester.runpytest(
        "--humanfix-model=buggy", f"--humanfix-task={LOOPING_TASK}", "--humanfix-timeout=60",
        "--humanfix-item-timeout=120", "--timeout=5")
    result.assert_outcomes(errors=1)
    assert "Timeout (>5.0s)" in records_by_task()[LOOPING_TASK]["error"]


def test_thread_method_timeout_kills_the_worker_and_the_jsonl_stays_whole(humanfix_pytester,
                                                                          records_by_task):
    """pytest-timeout's thread method ends the worker with os._exit; xdist replaces it, the
    task runs once more on the new worker (a crash is retried, whatever its cause), which it
    ends alike, and the controller writes an error record for the item they died on."""
    result = humanfix_pytester.runpytest(
        "--humanfix-model=buggy", f"--humanfix-task=Python/0,{LOOPING_TASK},Python/1",
        "--humanfix-timeout=20", "--timeout=10", "--timeout-method=thread", "-n", "1")
    # The first crash is retried ("R"), the retry's (on gw1) stands.
    result.stdout.fnmatch_lines(["R", "replacing crashed worker gw0", "*",
                                 f"*worker 'gw1' crashed while running*"
                                 f"{LOOPING_TASK.replace('/', '_')}*"])
    got = records_by_task()
    assert set(got) == {"Python/0", LOOPING_TASK, "Python/1"}
    crashed = got[LOOPING_TASK]
    assert crashed["outcome"] == "error" and "worker running this task died" in crashed["error"]
    assert crashed["worker"] == "gw1"
    assert "worker running this task died" in crashed["first_try"]["error"]
    assert got["Python/0"]["outcome"] == got["Python/1"]["outcome"] == "unfixed"


def test_item_timeout_is_derived_from_the_budget():
    # Generation is off the clock: each of 3 replies may take a sandbox run; then one grading
    # run. Each execution may run twice (a timeout is re-run); two grading runs per sample
    # (agent's guard: a run it stops is graded again without it); and the harness's own time.
    # A round's reply may be asked again once per ask-again temperature (one by default): 1 + 2
    # rounds x 2 replies.
    harness = HARNESS_SECONDS
    assert item_timeout(Settings(iters=2, timeout=10, request_timeout=300)) \
        == 5 * 20 + 2 * 20 + harness
    assert item_timeout(Settings(iters=2, timeout=10, ask_again_temperature=())) \
        == 3 * 20 + 2 * 20 + harness
    assert item_timeout(Settings(iters=2, samples=2, timeout=5, request_timeout=20)) \
        == 10 * 10 + 4 * 10 + harness
    assert item_timeout(Settings(iters=0, timeout=10, request_timeout=300), limit=30) \
        == 60 + 2 * 60 + harness
    assert item_timeout(Settings(iters=5, item_timeout=42.0)) == 42.0


SLOW_LOAD_CONFTEST = """
import time
import pytest_humanfix.session.runner as runner_module

real_load = runner_module.load_model

def slow_load(spec, settings):
    time.sleep(4)
    return real_load(spec, settings)

def pytest_configure(config):
    runner_module.load_model = slow_load

def pytest_unconfigure(config):
    runner_module.load_model = real_load
"""


def test_model_load_does_not_count_against_the_item_timeout(humanfix_pytester, records_by_task):
    humanfix_pytester.makeconftest(SLOW_LOAD_CONFTEST)
    result = humanfix_pytester.runpytest("--humanfix-model=canonical", "--humanfix-task=Python/0",
                                         "--humanfix-item-timeout=2")
    result.assert_outcomes(passed=1)
    assert records_by_task()["Python/0"]["outcome"] == "fixed"
