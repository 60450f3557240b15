"""--humanfix-repeat-check (session/repeat): which tasks are checked, the run's first reply
graded again on its own, and the check of one task made with the controls (the canonical
solution against the buggy one: a flip of known direction)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_doubles import CountingSandbox, Replies, fenced

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.base import Generation
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.records import Attempt, TaskResult
from pytest_humanfix.session.repeat import (
    RecordedReply,
    first_attempt_outcome,
    repeat_check,
    repeated,
)
from pytest_humanfix.settings import Settings


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> list[Task]:
    return load_tasks(str(dataset))


@pytest.fixture(scope="module")
def task(tasks: list[Task]) -> Task:
    return tasks[0]  # Python/0


def control(name: str):
    return load_model(name, GenerationConfig.of(Settings(model=name)))


class Unreachable:
    """A sandbox for what must not run anything."""

    def run(self, program: str):
        raise AssertionError("nothing should have run")


def first_result(outcome: str, *replies: str) -> TaskResult:
    return TaskResult(task_id="Python/0", entry_point="has_close_elements",
                      bug_type="missing logic", outcome=outcome,  # type: ignore[arg-type]
                      attempts=[Attempt(code="", diff="", verdict=None, reply=r, prompt="chat")
                                for r in replies])


def test_the_checked_tasks_are_the_first_n_of_the_selection(tasks):
    assert repeated(tasks[:5], Settings(repeat_check=2)) == {"Python/0", "Python/1"}
    assert repeated(tasks[:1], Settings(repeat_check=3)) == {"Python/0"}
    assert repeated(tasks[:5], Settings()) == frozenset()


def test_a_recorded_reply_answers_with_its_text_and_its_written_calls(task):
    model = RecordedReply("the reply", "chat")
    assert model.generate([], task) == Generation(text="the reply", engine="recorded")
    call = '<tool_call>\n{"name": "run_tests", "arguments": {"code": "x = 1"}}\n</tool_call>'
    tool = {"type": "function", "function": {"name": "run_tests", "parameters": {}}}
    generation = RecordedReply(call, "chat").generate([], task, tools=[tool])
    assert [c.argument("code") for c in generation.tool_calls] == ["x = 1"]
    assert model.computed_by["engine"] == "recorded"


def test_a_run_that_stopped_at_its_first_reply_keeps_its_outcome_unrun(task):
    first = first_result("fixed", "anything")
    assert first_attempt_outcome(first, task, Unreachable(), Settings(iters=2), False) == "fixed"


def test_a_first_reply_that_later_rounds_went_past_is_graded_on_its_own(task):
    replies = Replies(task)
    # Fixed in the second round; the first reply alone, the buggy code, did not fix it.
    first = first_result("fixed", replies.wrong[0], replies.fixed)
    sandbox = CountingSandbox()
    assert first_attempt_outcome(first, task, sandbox, Settings(iters=1), False) == "unfixed"
    assert sandbox.programs  # graded in the sandbox, once more


def test_the_repeat_of_a_buggy_first_attempt_by_the_canonical_control_flips(task):
    first = first_result("unfixed", fenced(task.buggy_code))
    check = repeat_check(task, first, control("canonical"), CountingSandbox(),
                         Settings(model="buggy"), langgraph=False)
    assert (check["spec"], check["engine"]) == ("canonical", "control")
    assert (check["first_outcome"], check["outcome"]) == ("unfixed", "fixed")
    assert check["outcome_flipped"] and check["reply_differs"]
    assert check["error"] == "" and check["failure"] == ""
    assert check["code"].rstrip() == task.canonical_code.rstrip()


def test_the_same_control_again_neither_differs_nor_flips(task):
    model = control("buggy")
    again = model.generate([], task).text  # the whole reply: no stop cuts it short
    check = repeat_check(task, first_result("unfixed", again), model, CountingSandbox(),
                         Settings(model="buggy", chat_stop="none"), langgraph=False)
    assert not check["reply_differs"] and not check["outcome_flipped"]
    assert check["outcome"] == "unfixed" and check["failure"]


class Failing:
    spec = "failing"
    prompt = "chat"
    computed_by: dict = {}

    def generate(self, *args, **kwargs):
        raise ConnectionError("server gone")


def test_a_repeat_that_cannot_be_made_is_an_error_not_a_raise(task):
    check = repeat_check(task, first_result("unfixed", "x"), Failing(), Unreachable(),
                         Settings(model="m"), langgraph=False)
    assert set(check) == {"error", "seconds"}
    assert check["error"] == "ConnectionError: server gone" and check["seconds"] >= 0
