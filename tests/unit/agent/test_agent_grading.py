"""Grading a final candidate (agent/grading): the tests it runs on, the hidden tests, which
attempt is graded, and the task's result with its flags and HumanEval+ verdict.
Python/0's canonical and buggy solutions are the oracles: one passes, the other fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from agent_doubles import CountingSandbox

from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.context import RepairContext
from pytest_humanfix.agent.grading import final_candidate, graded, run_hidden, run_tests
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.records import Attempt
from pytest_humanfix.sandbox.environment import Verdict
from pytest_humanfix.settings import Settings

# Tests that do not end by calling check(<entry point>), as another data set's may not.
UNCHECKED = Task(task_id="Python/900", entry_point="f", bug_type="value misuse", prompt="",
                   declaration="def f():\n", buggy_solution="    return 1\n",
                   canonical_solution="    return 0\n", test="assert f() == 0\n")


@pytest.fixture(scope="module")
def task(dataset: Path) -> Task:
    return load_tasks(str(dataset))[0]  # Python/0


def context(task: Task, sandbox=None, plus=None, **settings) -> RepairContext:
    return RepairContext(task=task, model=None,  # type: ignore[arg-type]  # grading never asks it
                         sandbox=sandbox or CountingSandbox(),
                         config=RepairConfig.of(Settings(**settings)), plus=plus)


def attempt(code: str, status: str = "", verdict: dict | None = None, **fields) -> Attempt:
    return Attempt(code=code, diff="", verdict=verdict, status=status, **fields)  # type: ignore[arg-type]


def always_equal(task: Task) -> str:
    """Passes the hidden tests by comparing equal to anything."""
    return task.declaration + ("    class Always:\n        def __eq__(self, other):\n"
                               "            return True\n    return Always()\n")


class Unreachable:
    def run(self, job):
        raise AssertionError("nothing should have run")


def test_run_tests_explains_a_failed_assert_with_its_values(task):
    sandbox = CountingSandbox()
    verdict = run_tests(context(task, sandbox), task.buggy_code, task.test)
    assert verdict.status == "failed"
    # Python's asserts are rewritten to tell the values they compared (agent/feedback).
    assert "_hf_compared(" in sandbox.programs[0]
    assert "+  where True = has_close_elements([1.0, 2.0, 3.9" in verdict.stderr
    assert run_tests(context(task), task.canonical_code, task.test).passed


def test_the_hidden_tests_run_once_apart_from_the_candidate(task):
    sandbox = CountingSandbox()
    verdict = run_hidden(context(task, sandbox), task.canonical_code)
    assert verdict.passed and len(sandbox.programs) == 1
    job = sandbox.jobs[0]
    assert "def check(" in job.tests.program and "def check(" not in job.candidate.program
    assert task.canonical_solution in job.candidate.program
    assert task.canonical_solution not in job.tests.program


def test_an_object_equal_to_everything_never_reaches_the_tests(task):
    """Before the tests ran apart, it passed, and only a guarded second run flagged it."""
    sandbox = CountingSandbox()
    verdict = run_hidden(context(task, sandbox), always_equal(task))
    assert verdict.status == "failed" and len(sandbox.programs) == 1
    statement, error = verdict.first_failure().splitlines()
    assert "has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3)" in statement
    assert error == ("CandidateError: has_close_elements returned a value that cannot reach the "
                     "tests: has_close_elements.<locals>.Always is not plain data (None, bool, "
                     "int, float, complex, str, bytes, list, tuple, dict, set, frozenset)")


def test_tests_that_do_not_end_by_calling_check_run_apart_as_well():
    sandbox = CountingSandbox()
    verdict = run_hidden(context(UNCHECKED, sandbox), UNCHECKED.canonical_code)
    assert verdict.passed and len(sandbox.programs) == 1


def test_the_final_candidate_is_the_latest_that_passed_the_check():
    statuses = ["failed", "rejected", "repeat", "rejected"]
    assert final_candidate([attempt("", s) for s in statuses]) == 2
    assert final_candidate([attempt("", "rejected"), attempt("", "rejected")]) == 1
    assert final_candidate([attempt("", "passed")]) == 0


def test_an_attempt_that_ran_the_hidden_tests_is_graded_without_running_again(task):
    verdict = run_hidden(context(task), task.canonical_code).to_dict()
    attempts = [attempt(task.buggy_code, "failed", tests="test"),
                attempt(task.canonical_code, "passed", tests="test", verdict=verdict, round=1)]
    result = graded(context(task, Unreachable()), attempts, 1)
    assert (result.outcome, result.final_attempt, result.fixed_round) == ("fixed", 1, 1)
    assert result.verdict == verdict and result.flags == [] and result.failure == ""
    assert [a.status for a in result.attempts] == ["failed", "passed"]


def test_a_candidate_not_run_in_a_round_is_graded_only(task):
    attempts = [attempt(task.buggy_code)]
    result = graded(context(task), attempts, 0)
    assert result.outcome == "unfixed" and result.fixed_round is None
    assert result.attempts[0].status == "graded" and attempts[0].status == ""  # not edited
    assert result.failure == Verdict(**result.verdict).first_failure() != ""
    assert "plus_outcome" not in result.to_dict()


def test_a_flagged_fix_stays_fixed_unless_strict(task):
    # A right answer with an always-equal class beside it, which it never returns.
    code = task.canonical_code + ("\n\nclass Always:\n    def __eq__(self, other):\n"
                                  "        return True\n")
    lenient = graded(context(task), [attempt(code)], 0)
    assert lenient.outcome == "fixed"
    assert lenient.flags == ["always-equal: class Always: __eq__ always returns True"]
    strict = graded(context(task, strict=True), [attempt(code)], 0)
    assert strict.outcome == "unfixed" and strict.fixed_round is None
    assert strict.failure == ("flagged, scored not fixed (--humanfix-strict): "
                              "always-equal: class Always: __eq__ always returns True")


def test_a_flagged_fix_in_another_language_counts_as_in_python(dataset):
    """Read by the language's own flags (languages/base.py): a JavaScript fix that silences
    console.assert passes the tests, and strict scores it not fixed."""
    js = load_tasks(str(dataset.parent / "humanevalpack-js.jsonl"))[0]
    code = "console.assert = () => {};\n" + js.buggy_code
    passed = Verdict(status="passed", exit_code=0, seconds=0.1, stdout="", stderr="",
                     network="none").to_dict()
    ran = [attempt(code, status="passed", verdict=passed, tests="test")]
    lenient = graded(context(js, Unreachable()), ran, 0)
    assert (lenient.outcome, lenient.flags) == ("fixed", ["redefined assert: console.assert ="])
    strict = graded(context(js, Unreachable(), strict=True), ran, 0)
    assert strict.outcome == "unfixed"
    assert strict.failure == ("flagged, scored not fixed (--humanfix-strict): "
                              "redefined assert: console.assert =")


def test_humanfix_plus_runs_whatever_the_hidden_verdict_and_fixes_only_both(task):
    ran: list[str] = []
    failed = Verdict(status="failed", exit_code=1, seconds=0.1, stdout="",
                     stderr="AssertionError: plus input 7\n", network="")

    def plus(code: str) -> Verdict:
        ran.append(code)
        return failed if code == task.canonical_code else dataclasses.replace(
            failed, status="passed", stderr="")

    fixed_here = graded(context(task, plus=plus), [attempt(task.canonical_code)], 0)
    assert (fixed_here.outcome, fixed_here.plus_outcome) == ("fixed", "unfixed")
    assert "plus input 7" in fixed_here.plus_failure
    buggy = graded(context(task, plus=plus), [attempt(task.buggy_code)], 0)
    assert (buggy.outcome, buggy.plus_outcome, buggy.plus_failure) == ("unfixed", "unfixed", "")
    assert buggy.plus_verdict["status"] == "passed"
    assert ran == [task.canonical_code, task.buggy_code]
