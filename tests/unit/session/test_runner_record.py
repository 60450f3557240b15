"""Runner.record makes a task's result the JSONL line docs/schema.md describes; a task a harness
error ended runs once more (Runner.evaluate), and a worker that died on a task has it run once
more on another, then leaves a harness-error record in its place (session/crash)."""

import json
from types import SimpleNamespace
from typing import get_type_hints

from pytest_humanfix.dataset import Task
from pytest_humanfix.records import Record, TaskResult
from pytest_humanfix.session.crash import Crashes, crashed_record
from pytest_humanfix.session.runner import Runner, answer_paths
from pytest_humanfix.session.state import RunState
from pytest_humanfix.session.workload import Workload
from pytest_humanfix.settings import Settings

TASK = Task(task_id="Python/0", entry_point="f", bug_type="operator misuse", prompt="",
            declaration="def f():\n", buggy_solution="    return 1\n",
            canonical_solution="    return 0\n", test="assert f() == 0\n")


def runner(**settings) -> Runner:
    workload = Workload(all_tasks=[TASK], tasks=[TASK], dataset_hashes={"python": "hash"},
                        sources={"python": "data.jsonl"}, labels={"python": "data.jsonl"})
    return Runner(Settings(model="m", **settings),
                  RunState("run-1", canonical_seconds={"Python/0": 0.5}), workload=workload)


def test_record_is_a_record_of_plain_json():
    record = runner(timeout=2.0).record(TaskResult(
        task_id="Python/0", entry_point="f", bug_type="operator misuse", outcome="fixed"))
    assert json.loads(json.dumps(record)) == record
    assert set(record) <= set(get_type_hints(Record))
    assert (record["run_id"], record["model"], record["language"]) == ("run-1", "m", "python")
    assert (record["dataset"], record["dataset_hash"]) == ("data.jsonl", "hash")
    assert record["protocol"]["timeout"] == 2.0 and record["protocol"]["language"] == "python"
    # The calibrated limit: ten times the canonical solution's half second, over the floor.
    assert record["time_limit"] == {"seconds": 5.0, "canonical_seconds": 0.5,
                                    "factor": 10.0, "floor": 2.0}
    assert record["sandbox"] is None and record["model_error"] is None
    assert "plus_time_limit" not in record and "known_failure" not in record


def test_a_crashed_worker_leaves_an_error_record_naming_it():
    report = SimpleNamespace(longrepr="signal 9", node=SimpleNamespace(
        gateway=SimpleNamespace(id="gw3")))
    record = crashed_record(runner(), "test_humanfix.py::Python_0_f", report)
    assert record is not None
    assert record["outcome"] == "error" and record["worker"] == "gw3"
    assert "died while running Python/0 (signal 9)" in record["error"]


def test_a_crash_of_no_task_of_the_run_makes_no_record():
    report = SimpleNamespace(longrepr="signal 9", node=None)
    assert crashed_record(runner(), "test_other.py::test_x", report) is None


def test_plus_time_limit_is_set_from_the_reference_times():
    reference = {"Python/0": {"seconds": 1.0, "inputs": [0.5, 2.0]}}
    limit = Runner(Settings(model="m", timeout=2.0),
                   RunState("run-1", plus_reference=reference)).plus_time_limit(TASK)
    assert limit["reference_seconds"] == 1.0
    # EvalPlus's: max(4 s, 4 x the reference's CPU time) per input.
    assert limit["inputs"]["longest"] == 8.0 and limit["inputs"]["reference_longest"] == 2.0
    assert limit["seconds"] >= 10.0  # at least the calibrated one: 10 x the reference's second


def test_plus_time_limit_without_reference_times_is_the_floor():
    limit = Runner(Settings(model="m"), RunState("run-1")).plus_time_limit(TASK)
    assert limit["reference_seconds"] is None and limit["inputs"]["reference_longest"] is None
    assert limit["inputs"]["longest"] == 4.0


def test_the_sandbox_hides_every_file_that_holds_answers(tmp_path):
    """The data files (their folders go whole in bwrap), the reports, the results, the
    baseline and the recorded replies (docs/sandbox.md#what-a-candidate-can-read)."""
    data = tmp_path / "data" / "humanevalpack-python.jsonl"
    data.parent.mkdir()
    data.write_text("")
    workload = Workload(all_tasks=[TASK], tasks=[TASK], dataset_hashes={"python": "hash"},
                        sources={"python": str(data)}, labels={"python": str(data)})
    reports = tmp_path / "reports"
    settings = Settings(model="replay:/recorded/replies.jsonl", report_dir=str(reports),
                        baseline="/runs/baseline.jsonl")
    assert answer_paths(settings, workload) == (
        str(data), str(reports), str(reports / "humanfix.jsonl"), "/runs/baseline.jsonl",
        "/recorded/replies.jsonl")
    assert answer_paths(Settings(model="m", report_dir=str(reports)), workload) == (
        str(data), str(reports), str(reports / "humanfix.jsonl"))


def scripted(made: Runner, outcomes: list[str]) -> list[str]:
    """Makes `made` answer each evaluation with the next of `outcomes` (an error: a harness
    fault); returns what is left of them."""
    left = list(outcomes)

    def evaluate_once(task: Task, agent: object = None) -> TaskResult:
        outcome = left.pop(0)
        return (TaskResult.error_for(task, "sandbox broke", 1.0) if outcome == "error" else
                TaskResult(task_id=task.task_id, entry_point="f", bug_type="b",
                           outcome=outcome))  # type: ignore[arg-type]

    made.evaluate_once = evaluate_once  # type: ignore[method-assign]
    return left


def test_a_harness_error_is_retried_once_and_the_retry_decides():
    made = runner()
    left = scripted(made, ["error", "fixed", "unfixed"])
    result = made.evaluate(TASK)
    assert result.outcome == "fixed" and left == ["unfixed"]
    assert result.first_try is not None
    assert (result.first_try["outcome"], result.first_try["error"]) == ("error", "sandbox broke")
    record = made.record(result)
    assert record["first_try"]["seconds"] == 1.0 and record["first_try"]["finished_at"]


def test_an_error_on_the_retry_stands_and_a_task_without_error_is_not_retried():
    made = runner()
    left = scripted(made, ["error", "error", "fixed"])
    result = made.evaluate(TASK)
    assert result.outcome == "error" and result.first_try is not None and left == ["fixed"]
    assert "first_try" not in runner().record(TaskResult(
        task_id="Python/0", entry_point="f", bug_type="b", outcome="unfixed"))
    left = scripted(made, ["unfixed", "fixed"])
    assert made.evaluate(TASK).first_try is None and left == ["fixed"]


def test_samples_are_retried_whole_and_a_model_that_failed_to_load_is_not():
    made = runner(samples=3, temperature=0.8)
    left = scripted(made, ["fixed", "error", "fixed", "unfixed", "fixed", "spare"])
    result = made.evaluate(TASK)
    assert [s.outcome for s in result.samples] == ["fixed", "unfixed", "fixed"]
    assert result.first_try is not None and left == ["spare"]
    broken = runner()
    broken._model_error = "model 'm' failed to load: no such file"
    left = scripted(broken, ["error", "fixed"])
    assert broken.evaluate(TASK).first_try is None and left == ["fixed"]


class Scheduler:
    """xdist's scheduler as a crash retry uses it; `can` False: one that cannot put a test
    back (`--dist loadscope`)."""

    def __init__(self, can: bool = True) -> None:
        self.can, self.pending = can, []

    def mark_test_pending(self, item: str) -> None:
        if not self.can:
            raise NotImplementedError
        self.pending.append(item)


NODE = "humanevalfix::Python_0_f"


def crash_report(outcome: str = "failed") -> SimpleNamespace:
    return SimpleNamespace(nodeid=NODE, when="???", outcome=outcome, longrepr="signal 9",
                           node=SimpleNamespace(gateway=SimpleNamespace(id="gw0")))


def test_a_crashed_task_is_put_back_once_and_its_retry_keeps_the_crash():
    crashes = Crashes(runner())
    first, sched = crash_report(), Scheduler()
    crashes.pytest_handlecrashitem(NODE, first, sched)
    assert sched.pending == [NODE] and first.outcome == "rerun"
    assert crashes.standing(first) is None  # the retry reports the task
    assert crashes.pytest_report_teststatus(first) == ("rerun", "R", "RERUN")
    retried = crashes.with_first_try(NODE, {"task_id": "Python/0", "outcome": "fixed"})
    assert retried["first_try"]["outcome"] == "error"
    assert "died while running Python/0" in retried["first_try"]["error"]
    again = crash_report()
    crashes.pytest_handlecrashitem(NODE, again, sched)  # the retry crashed too: it stands
    assert sched.pending == [NODE] and again.outcome == "failed"
    assert crashes.standing(again)["outcome"] == "error"
    assert crashes.never_retried({"Python/0"}) == []


def test_a_crash_another_plugin_reruns_or_no_scheduler_can_requeue_stands():
    crashes, sched = Crashes(runner()), Scheduler()
    rerun = crash_report("rerun")  # pytest-rerunfailures put it back already
    crashes.pytest_handlecrashitem(NODE, rerun, sched)
    assert sched.pending == [] and crashes.with_first_try(NODE, {}) == {}
    stuck = crash_report()
    crashes.pytest_handlecrashitem(NODE, stuck, Scheduler(can=False))
    assert stuck.outcome == "failed" and crashes.standing(stuck) is not None


def test_a_retry_that_never_ran_leaves_the_crash_as_the_tasks_record():
    crashes = Crashes(runner())
    crashes.pytest_handlecrashitem(NODE, crash_report(), Scheduler())
    [left] = crashes.never_retried(set())
    assert left["task_id"] == "Python/0" and left["outcome"] == "error"
