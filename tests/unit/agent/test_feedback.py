"""The feedback a repair round hears: the values behind a failed assert, computed inside the
sandbox, and an exception's type, message and the candidate's own frames, bounded in length."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.agent.feedback import FEEDBACK_CHARS, explained_tests, what_happened
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.fresh import ProcessSandbox
from pytest_humanfix.sandbox.program import python_job

TESTS = """

def check(f):
    assert f(3.5) == 0.5
    assert abs(f(1.33) - 0.33) < 1e-6
    for x in (1, 2):
        assert f(x) is not None, "message of the test"
    assert 0 <= f(0.25) < 1
    assert not f(2.0)
    assert f(0.5)

check(f)
"""


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    return ProcessSandbox(Limits(timeout=10))


def run(sandbox: ProcessSandbox, body: str, tests: str = TESTS, explain: bool = True):
    code = "def f(number):\n" + body
    return sandbox.run(python_job(code, explained_tests(tests) if explain else tests, "f"))


def test_a_failed_assert_shows_both_sides_and_the_call_that_made_them(sandbox):
    verdict = run(sandbox, "    return number % 1.0 + 1.0\n")
    assert verdict.status == "failed"
    assert what_happened(verdict) == ("assert f(3.5) == 0.5\n"
                                      "assert 1.5 == 0.5\n"
                                      " +  where 1.5 = f(3.5)")


def test_nested_calls_are_shown_innermost_first(sandbox):
    verdict = run(sandbox, "    return number % 1.0 if number != 1.33 else 0.5\n")
    told = what_happened(verdict)
    assert told.splitlines()[:2] == ["assert abs(f(1.33) - 0.33) < 1e-6",
                                     "assert 0.16999999999999998 < 1e-06"]
    assert told.splitlines()[2:] == [" +  where 0.5 = f(1.33)",
                                     " +  where 0.16999999999999998 = abs(f(1.33) - 0.33)"]


@pytest.mark.parametrize("body, told", [
    # The assert's own message is shown; asserts inside a loop are explained too.
    ("    return None if number == 1 else number % 1.0\n",
     ["assert f(x) is not None",
      "assert None is not None", " +  where None = f(x)", "message: 'message of the test'"]),
    # A chained comparison and a bare truth test: the calls' values, with no comparison line.
    ("    return 2.0 if number == 0.25 else number % 1.0\n",
     ["assert 0 <= f(0.25) < 1", " +  where 2.0 = f(0.25)"]),
    ("    return 1.0 if number == 2.0 else number % 1.0\n",
     ["assert not f(2.0)", " +  where 1.0 = f(2.0)"]),
])
def test_every_kind_of_assert_is_explained(sandbox, body, told):
    assert what_happened(run(sandbox, body)).splitlines() == told


def test_explained_tests_pass_and_fail_exactly_as_the_original(sandbox):
    """The same expressions, once each, in the same order: what passes passes, what fails
    fails, and an assert's side effects happen as often as before."""
    counting = ("    print('called')\n"
                "    return number % 1.0 if number != 0.5 else 0.5\n")
    for explain in (False, True):
        verdict = run(sandbox, counting, explain=explain)
        assert verdict.passed, verdict.stderr
        assert verdict.stdout == "called\n" * 7
    for explain in (False, True):
        assert run(sandbox, "    return 0.5\n", explain=explain).status == "failed"


def test_an_exception_is_told_with_the_candidates_own_frames(sandbox):
    body = "    return helper(number)\n\ndef helper(x):\n    return 1 / (x - x)\n"
    told = what_happened(run(sandbox, body))
    assert told == ("return 1 / (x - x)\n"
                    "ZeroDivisionError: float division by zero\n"
                    "raised in your code:\n"
                    "  in f: return helper(number)\n"
                    "  in helper: return 1 / (x - x)")


def test_what_is_told_is_bounded(sandbox):
    told = what_happened(run(sandbox, "    return [number] * 100000\n"))
    assert len(told) <= FEEDBACK_CHARS
    first, compared, where = told.splitlines()
    assert compared.startswith("assert [3.5, 3.5") and compared.endswith("... == 0.5")
    assert len(compared) < 200 and where.endswith("= f(3.5)")


def test_a_candidate_rebinding_the_helpers_changes_no_verdict(sandbox):
    """check binds the helpers to locals first: a candidate that rebinds the globals while the
    tests run cannot make them compare something else."""
    hostile = ("    g = globals()\n"
               "    g['_humanfix_note'] = lambda text, value: 0.5\n"
               "    g['_humanfix_compared'] = lambda *a: ''\n"
               "    return number % 1.0 + 1.0\n")
    verdict = run(sandbox, hostile)
    assert verdict.status == "failed"
    assert "assert 1.5 == 0.5" in what_happened(verdict)


def test_tests_without_check_or_that_do_not_parse_are_left_as_they_are():
    assert explained_tests("assert f(1) == 2\n") == "assert f(1) == 2\n"
    assert explained_tests("def check(:\n") == "def check(:\n"


def test_every_humanevalfix_test_is_explained(dataset: Path):
    """Each of the 164 Python tests has a `check` whose asserts are all rewritten (the control
    runs, canonical 164/164 and buggy 0/164, run them explained)."""
    tasks = load_tasks(str(dataset))
    assert len(tasks) == 164
    for task in tasks:
        explained = explained_tests(task.test)
        assert explained != task.test, task.task_id
        check = explained[explained.index("def check("):]
        assert "    assert " not in check, task.task_id
