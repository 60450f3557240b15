"""A task's pytest item (session/items): the report of a task not fixed, what a rerun keeps of
the run it replaced, and how setup and the call turn a result into pytest's outcome. The item
is driven here with stand-ins for its config and runner; whole runs: runs/."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_humanfix.agent.loader import FIXTURE
from pytest_humanfix.dataset import Task
from pytest_humanfix.records import Record, TaskResult, earlier_run
from pytest_humanfix.session import RUNNER
from pytest_humanfix.session.items import DIFF_LINES_SHOWN, TaskItem, failure_report

TASK = Task(task_id="Python/0", entry_point="f", bug_type="operator misuse", prompt="",
            declaration="def f():\n", buggy_solution="    return 1\n",
            canonical_solution="    return 0\n", test="assert f() == 0\n")


def result(outcome: str = "unfixed", **fields: object) -> TaskResult:
    return TaskResult(task_id="Python/0", entry_point="f", bug_type="operator misuse",
                      outcome=outcome, **fields)  # type: ignore[arg-type]


def test_the_failure_report_names_the_task_its_first_failure_and_the_diff():
    report = failure_report(TASK, result(failure="AssertionError\nf() == 1", diff="-a\n+b\n"))
    assert report.splitlines() == [
        "Python/0 f [operator misuse]: not fixed", "first failure:", "    AssertionError",
        "    f() == 1", "diff of the candidate against the buggy code:", "-a", "+b"]


def test_the_failure_report_of_an_unchanged_candidate_says_so():
    report = failure_report(TASK, result(code="def f():\n    return 0\n"))
    assert "    ?" in report.splitlines()
    assert report.endswith("(the candidate is the buggy code, unchanged)")


def test_the_failure_report_never_calls_the_buggy_code_a_candidate_where_there_was_none():
    assert failure_report(TASK, result()).endswith("(no candidate)")
    raised = failure_report(TASK, result(
        failure="agents.py:agent raised ValueError: no idea", agent_error={
            "type": "ValueError", "message": "no idea"}))
    assert raised.splitlines()[0] == "Python/0 f [operator misuse]: the agent raised"
    assert raised.endswith("(no candidate: the agent raised ValueError: no idea)")
    assert "buggy code, unchanged" not in raised


def test_a_long_diff_is_cut_and_says_how_much_is_left_out():
    diff = "".join(f"+line {n}\n" for n in range(DIFF_LINES_SHOWN + 5))
    lines = failure_report(TASK, result(diff=diff)).splitlines()
    assert lines[-1] == "... 5 more diff lines"
    assert lines[-2] == f"+line {DIFF_LINES_SHOWN - 1}"


def test_an_earlier_run_keeps_why_it_ran_again_and_what_it_cost():
    record: Record = {"task_id": "Python/0", "outcome": "error", "error": "worker died",
                      "seconds": 3.5, "tokens": {"prompt": 10, "completion": 4},
                      "finished_at": "2026-11-27T10:00:00", "code": "dropped"}
    assert earlier_run(record) == {"outcome": "error", "error": "worker died", "failure": "",
                                   "seconds": 3.5, "tokens": {"prompt": 10, "completion": 4},
                                   "finished_at": "2026-11-27T10:00:00"}
    # A record of an earlier version lacks the fields: each is there, empty.
    assert earlier_run({"outcome": "fixed"}) == {"outcome": "fixed", "error": "", "failure": "",
                                                 "seconds": None, "tokens": None,
                                                 "finished_at": None}


class Runner:
    """What the item asks of the run's Runner."""

    def __init__(self, outcome: TaskResult, resumed: dict[str, Record] | None = None,
                 gated: bool = False) -> None:
        self.outcome = outcome
        self.state = SimpleNamespace(resumed=resumed or {})
        self.settings = SimpleNamespace(gated=gated, agent="repair")
        self.evaluated: list[object] = []

    def evaluate(self, task: Task, agent: object) -> TaskResult:
        self.evaluated.append(agent)
        return self.outcome

    def record(self, result: TaskResult) -> Record:
        return {**result.to_dict(), "run_id": "run-2"}


def item(runner: Runner, agent_error: TaskResult | None = None) -> TaskItem:
    """A TaskItem's state without pytest's session: its methods run on it as on the item."""
    fake = SimpleNamespace(task=TASK, result=None, humanfix_record=None, reruns=[],
                           user_properties=[], funcargs={FIXTURE: "the agent"},
                           config=SimpleNamespace(stash={RUNNER: runner}),
                           agent_error=lambda: agent_error)
    return fake  # type: ignore[return-value]


def test_setup_evaluates_the_task_with_the_fixtures_agent_and_records_it():
    runner = Runner(result("fixed"))
    fake = item(runner)
    TaskItem.setup(fake)
    assert runner.evaluated == ["the agent"]
    assert fake.humanfix_record["run_id"] == "run-2" and "reruns" not in fake.humanfix_record
    assert fake.user_properties[:3] == [("task_id", "Python/0"),
                                        ("bug_type", "operator misuse"), ("outcome", "fixed")]
    # Then the task's cost, as reporting/junit.py's task_properties gives it.
    assert [name for name, _ in fake.user_properties[3:]] == [
        "prompt_tokens", "completion_tokens", "tokens", "replies", "sandbox_runs", "seconds"]
    TaskItem.runtest(fake)  # fixed: the call passes


def test_setup_of_a_resumed_task_reproduces_its_record_without_evaluating():
    recorded: Record = {**result("unfixed", failure="f() == 1").to_dict(), "run_id": "run-1"}
    runner = Runner(result("fixed"), resumed={"Python/0": recorded})
    fake = item(runner)
    TaskItem.setup(fake)
    assert runner.evaluated == [] and fake.humanfix_record is recorded
    assert fake.result.outcome == "unfixed" and fake.result.failure == "f() == 1"
    assert ("resumed_from", "run-1") in fake.user_properties


def test_a_rerun_keeps_the_run_it_replaces_and_starts_its_properties_afresh():
    runner = Runner(result("fixed"))
    fake = item(runner)
    fake.humanfix_record = {"outcome": "error", "error": "worker died"}
    fake.user_properties = [("task_id", "Python/0"), ("outcome", "error")]
    TaskItem.setup(fake)
    assert [r["error"] for r in fake.humanfix_record["reruns"]] == ["worker died"]
    assert fake.user_properties.count(("task_id", "Python/0")) == 1


def test_an_agent_that_cannot_be_set_up_is_a_harness_error_with_a_record():
    runner = Runner(result("fixed"))
    fake = item(runner, agent_error=TaskResult.error_for(TASK, "AgentLoadError: no agent"))
    with pytest.raises(pytest.fail.Exception, match="harness error on Python/0: AgentLoadError"):
        TaskItem.setup(fake)
    assert runner.evaluated == [] and fake.humanfix_record["outcome"] == "error"


def test_an_unfixed_task_fails_with_its_report_or_is_expected_to_under_a_gate():
    fake = item(Runner(result()))
    fake.result = result(failure="f() == 1")
    with pytest.raises(pytest.fail.Exception, match="Python/0 f \\[operator misuse\\]: not fixed"):
        TaskItem.runtest(fake)
    gated = item(Runner(result(), gated=True))
    gated.result = fake.result
    with pytest.raises(pytest.xfail.Exception, match="^not fixed\nPython/0 f"):
        TaskItem.runtest(gated)


def test_a_known_failure_is_expected_whatever_its_outcome_but_an_error_is_not():
    fake = item(Runner(result()))
    fake.humanfix_record = {"known_failure": "needs js-md5"}
    fake.result = result("fixed")
    with pytest.raises(pytest.xfail.Exception, match="known failure here \\(fixed\\): needs"):
        TaskItem.runtest(fake)
    fake.result = result("error")
    TaskItem.runtest(fake)  # setup already failed an error; the call adds nothing
