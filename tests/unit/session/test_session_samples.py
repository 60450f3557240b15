"""A task's samples taken as one task result (session/samples.py)."""

from __future__ import annotations

from pytest_humanfix.records import TaskResult
from pytest_humanfix.session.samples import sampled


def result(outcome: str, **fields) -> TaskResult:
    return TaskResult(task_id="Python/0", entry_point="f", bug_type="operator misuse",
                      outcome=outcome, **fields)  # type: ignore[arg-type]


def test_one_sample_is_the_tasks_result_as_it_is():
    only = result("fixed", code="x", seconds=1.5)
    assert sampled([only]) is only


def test_samples_keep_the_first_ones_details_and_every_outcome():
    combined = sampled([result("fixed", code="first", seconds=1.0, sandbox_runs=2),
                        result("unfixed", code="second", seconds=2.5, sandbox_runs=3)])
    assert (combined.outcome, combined.code) == ("fixed", "first")
    assert [s.outcome for s in combined.samples] == ["fixed", "unfixed"]
    assert (combined.seconds, combined.sandbox_runs) == (3.5, 5)


def test_an_error_in_any_sample_makes_the_task_an_error_naming_the_sample():
    combined = sampled([result("fixed"), result("error", error="the sandbox was lost")])
    assert combined.outcome == "error"
    assert combined.error == "sample 2: the sandbox was lost"
