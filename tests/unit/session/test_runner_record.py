"""Runner.record makes a task's result the JSONL line docs/schema.md describes; a worker that
died on a task leaves a harness-error record in its place (session/crash)."""

import json
from types import SimpleNamespace
from typing import get_type_hints

from pytest_humanfix.dataset import Task
from pytest_humanfix.records import Record, TaskResult
from pytest_humanfix.session.crash import crashed_record
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
    # The calibrated limit: four times the reference solution's half second, over the floor,
    # capped by --humanfix-timeout; the re-run's twice that, capped too.
    assert record["time_limit"] == {"seconds": 2.0, "rerun_seconds": 2.0,
                                    "canonical_seconds": 0.5, "factor": 4.0, "floor": 1.0,
                                    "cap": 2.0}
    record = runner(timeout=10.0, timeout_floor=0.5).record(TaskResult(
        task_id="Python/0", entry_point="f", bug_type="operator misuse", outcome="fixed"))
    assert record["time_limit"] == {"seconds": 2.0, "rerun_seconds": 4.0,
                                    "canonical_seconds": 0.5, "factor": 4.0, "floor": 0.5,
                                    "cap": 10.0}
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
    # EvalPlus's backstop, min(60 s, the inputs' limits' sum) + 1 s, over the calibrated 2 s.
    assert limit["seconds"] == 13.0


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
