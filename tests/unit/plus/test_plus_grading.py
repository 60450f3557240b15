"""HumanEval+ grading on its own (pytest_humanfix/plus): EvalPlus's limits, the data read into
programs, the checker's verdicts on real tasks, and what a verdict is read back as."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.plus.checker import TIMEOUT_ERROR, TIMES
from pytest_humanfix.plus.data import PlusData, PlusDataError, fix_id, load_plus, task_from_row
from pytest_humanfix.plus.known import PLUS_KNOWN_FAILURES
from pytest_humanfix.plus.limits import (
    GT_TIME_LIMIT_FACTOR,
    MIN_TIME_LIMIT,
    TIMEOUT_PER_TASK,
    input_limits,
    program_limit,
)
from pytest_humanfix.plus.verdicts import (
    InputLimits,
    failure,
    is_reference_times,
    reference_times,
    stopped_input,
)
from pytest_humanfix.sandbox.environment import Limits, Verdict
from pytest_humanfix.sandbox.fresh import ProcessSandbox



def verdict(status: str = "failed", stdout: str = "", stderr: str = "",
            rerun: bool = False) -> Verdict:
    return Verdict(status=status, exit_code=0 if status == "passed" else 1, seconds=0.5,
                   stdout=stdout, stderr=stderr, network="none", rerun=rerun)


def test_each_input_gets_four_times_its_reference_time_and_never_under_the_floor():
    assert input_limits([0.001, 1.0, 2.5]) == [MIN_TIME_LIMIT, MIN_TIME_LIMIT,
                                               GT_TIME_LIMIT_FACTOR * 2.5]


def test_the_programs_backstop_is_the_sum_of_its_inputs_capped_at_evalplus_per_task_limit():
    assert program_limit([4.0, 4.0]) == 9.0
    assert program_limit([MIN_TIME_LIMIT] * 1000) == TIMEOUT_PER_TASK + 1.0


def test_reference_times_are_read_from_the_last_times_line_of_a_passed_run():
    passed = verdict("passed", stdout=f"noise\n{TIMES} [0.1, 0.2]\n")
    assert reference_times(passed) == {"seconds": 0.5, "inputs": [0.1, 0.2]}
    # A failed reference, or a times line cut by the output cap, leaves every input at the floor.
    assert reference_times(verdict("failed", stdout=f"{TIMES} [0.1]"))["inputs"] == []
    assert reference_times(verdict("passed", stdout=f"{TIMES} [0.1, 0."))["inputs"] == []


@pytest.mark.parametrize(("value", "valid"), [
    ({"seconds": 1.5, "inputs": [0.1, 2]}, True),
    ({"seconds": 1, "inputs": []}, True),
    ({"seconds": "1", "inputs": []}, False),
    ({"seconds": 1.0, "inputs": ["0.1"]}, False),
    ({"inputs": []}, False),
    ([1.0], False),
])
def test_a_cached_reference_time_is_recognised_only_in_its_own_shape(value, valid):
    assert is_reference_times(value) is valid


def test_an_input_past_its_limit_is_a_timeout_that_names_the_input():
    message = "HumanEval+ input 3 of 9: f(1) ran past its limit, 4 s of CPU"
    stopped = verdict(stderr=f"Traceback ...\n{TIMEOUT_ERROR}: {message}\n")
    assert stopped_input(stopped) == message
    assert failure(stopped) == message
    stopped.rerun = True
    assert failure(stopped) == message + "; re-run, it ran past it again"
    # The limit's exception without a message still says what happened.
    assert stopped_input(verdict(stderr=TIMEOUT_ERROR)) == "a HumanEval+ input ran past its limit"


def test_a_wrong_output_is_shown_as_the_checkers_own_message():
    stderr = ("Traceback (most recent call last):\n  File \"x\", line 1\n"
              "    raise AssertionError(\nAssertionError: HumanEval+ input 2 of 5: f(0) "
              "returned 1, expected 0\n")
    assert failure(verdict(stderr=stderr)) == "HumanEval+ input 2 of 5: f(0) returned 1, expected 0"
    # Another error is the candidate's own, shown as any failure is.
    assert failure(verdict(stderr="ValueError: bad\n")) == "ValueError: bad"


class Scripted:
    """A sandbox whose one verdict is given."""

    layer = None

    def __init__(self, given: Verdict) -> None:
        self.given = given

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        return self.given

    def shutdown(self) -> None:
        pass


def test_input_limits_turn_only_a_stopped_input_into_a_timeout():
    stopped = verdict(stderr=f"{TIMEOUT_ERROR}: input 1 ran past its limit")
    assert InputLimits(Scripted(stopped)).run("program").status == "timeout"
    wrong = verdict(stderr="AssertionError: HumanEval+ input 1 of 1: f() returned 1, expected 0")
    assert InputLimits(Scripted(wrong)).run("program").status == "failed"


def test_humaneval_ids_are_humanevalfix_ids():
    assert fix_id("HumanEval/12") == "Python/12"
    assert fix_id("Python/12") == "Python/12"


def test_evalplus_native_form_is_refused_naming_the_file_to_use():
    with pytest.raises(PlusDataError, match="originfmt"):
        task_from_row({"task_id": "HumanEval/0", "plus_input": []}, "plus.jsonl")


def test_a_file_of_another_format_is_refused(tmp_path):
    other = tmp_path / "plus.csv"
    other.write_text("task_id\n")
    with pytest.raises(PlusDataError, match=r"\.jsonl or \.jsonl\.gz"):
        load_plus(str(other), [])


def test_the_known_failures_are_python_tasks_each_with_its_reason():
    assert PLUS_KNOWN_FAILURES
    for task_id, reason in PLUS_KNOWN_FAILURES.items():
        assert task_id.startswith("Python/") and len(reason) > 20, task_id


@pytest.fixture(scope="module")
def fix_tasks(dataset: Path) -> dict[str, Task]:
    return {task.task_id: task for task in load_tasks(str(dataset))}


@pytest.fixture(scope="module")
def plus(fix_tasks) -> PlusData:
    return load_plus(PACKAGED, list(fix_tasks.values()))


def test_every_humanevalfix_task_has_its_plus_task(plus, fix_tasks):
    assert set(plus.tasks) == set(fix_tasks)
    # The six tasks without outputs compute them with EvalPlus's reference (plus/data.py).
    assert sorted(fix_tasks[task_id].number for task_id, task in plus.tasks.items()
                  if task.results is None) == [14, 15, 83, 100, 130, 139]
    assert plus.tasks["Python/32"].atol > 0  # find_zero's oracle bound; floats elsewhere


def test_a_fix_of_another_entry_point_is_refused(fix_tasks):
    renamed = [dataclasses.replace(fix_tasks["Python/0"], entry_point="other")]
    with pytest.raises(PlusDataError, match="entry point"):
        load_plus(PACKAGED, renamed)


def test_canonical_passes_and_buggy_fails_naming_the_input(plus, fix_tasks):
    task, plus_task = fix_tasks["Python/0"], plus.tasks["Python/0"]
    sandbox = ProcessSandbox(Limits(timeout=60))
    limits = input_limits([0.0] * 10)
    assert sandbox.run(plus_task.program(task.canonical_code, limits)).passed
    buggy = sandbox.run(plus_task.program(task.buggy_code, limits))
    assert buggy.status == "failed"
    assert failure(buggy).startswith("HumanEval+ input ") and "expected" in failure(buggy)


def test_the_reference_run_gives_a_time_for_each_input(plus):
    reference = ProcessSandbox(Limits(timeout=60)).run(plus.tasks["Python/2"].reference_program)
    times = reference_times(reference)
    inputs = eval(plus.tasks["Python/2"].inputs)  # a Python literal of argument lists
    assert reference.passed and len(times["inputs"]) == len(inputs)
    assert is_reference_times(times)


def test_a_known_failure_fails_for_the_reason_listed(plus, fix_tasks):
    # Python/44: change_base(0, 3) returns '', HumanEval+ expects '0'.
    task = fix_tasks["Python/44"]
    wrong = ProcessSandbox(Limits(timeout=60)).run(
        plus.tasks["Python/44"].program(task.canonical_code, []))
    assert wrong.status == "failed" and "returned ''" in failure(wrong)
    assert "change_base(0, 3)" in PLUS_KNOWN_FAILURES["Python/44"]
