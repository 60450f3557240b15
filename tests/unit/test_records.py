"""A task's result becomes its record and comes back from it; a record of an earlier version,
lacking later fields, still reads."""

import json

from pytest_humanfix.jsonl import JsonlWriter
from pytest_humanfix.records import Attempt, TaskResult, graded_round, read_records


def result(**fields) -> TaskResult:
    return TaskResult(task_id="Python/0", entry_point="f", bug_type="operator misuse", **fields)


def test_record_round_trips_through_the_file(tmp_path):
    fixed = result(outcome="fixed", code="x", final_attempt=1, fixed_round=1, attempts=[
        Attempt(code="a", diff="", verdict=None, prompt_tokens=3, completion_tokens=4),
        Attempt(code="x", diff="", verdict={"passed": True}, prompt_tokens=5, round=1)])
    writer = JsonlWriter(tmp_path / "r.jsonl")
    writer.open()
    writer.write(fixed.to_dict())
    writer.close()
    [record] = read_records(tmp_path / "r.jsonl", bad_lines="raise")
    assert record["tokens"] == {"prompt": 8, "completion": 4}
    assert (record["n"], record["n_fixed"]) == (1, 1)
    assert TaskResult.from_record(record) == fixed


def test_a_run_without_humanfix_plus_writes_no_plus_fields():
    assert not {"plus_outcome", "plus_verdict", "plus_failure"} & set(
        result(outcome="unfixed").to_dict())
    assert result(outcome="fixed", plus_outcome="unfixed").to_dict()["plus_outcome"] == "unfixed"


def test_an_old_record_without_fixed_round_reads_it_from_its_graded_attempt(tmp_path):
    # Written before rounds were kept: no fixed_round, no round in the attempts.
    old = {"task_id": "Python/0", "entry_point": "f", "bug_type": "b", "outcome": "fixed",
           "final_attempt": 2, "attempts": [{"code": "", "diff": "", "verdict": None}] * 3,
           "protocol": {"iters": 2}}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n")
    [record] = read_records(path, bad_lines="raise")
    assert graded_round(record) == 2
    assert TaskResult.from_record(record).fixed_round == 2
