"""What the model is told (agent/prompts.py), on real tasks: BigCode's first turn in each variant,
the stops of a chat reply, and the feedback turns of each prompt kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.agent import prompts
from pytest_humanfix.dataset import Task, load_tasks


@pytest.fixture(scope="module")
def task(dataset: Path) -> Task:
    return load_tasks(str(dataset))[0]  # Python/0, has_close_elements


@pytest.fixture(scope="module")
def go_task(dataset: Path) -> Task:
    return load_tasks(str(dataset.parent / "humanevalpack-go.jsonl"))[0]


def test_the_tests_variant_shows_declaration_buggy_solution_tests_then_the_instruction(task):
    assert prompts.first_prompt(task, "tests") == (
        task.declaration + task.buggy_solution + "\n" + task.test
        + "\nFix bugs in has_close_elements.").strip()


def test_the_docs_variant_shows_the_docstring_prompt_and_no_tests(task):
    assert prompts.first_prompt(task, "docs") == (
        task.prompt + task.buggy_solution + "\nFix bugs in has_close_elements.").strip()


def test_an_unknown_variant_names_the_two(task):
    with pytest.raises(ValueError, match=r"variant must be one of \('tests', 'docs'\), not 'x'"):
        prompts.first_prompt(task, "x")


def test_a_primed_answer_begins_with_the_prompt_base_less_its_last_newline(task):
    assert prompts.answer_start(task, "tests") == task.declaration.rstrip()
    assert prompts.answer_start(task, "tests") + "\n" == task.declaration


def test_a_chat_reply_stops_at_its_first_closed_block_and_in_python_at_a_check_of_its_own(
        task, go_task):
    assert prompts.chat_stop("code", task) == ["\n```\n", "\ndef check("]
    assert prompts.chat_stop("code", go_task) == ["\n```\n"]
    assert prompts.chat_stop("none", task) == []


def test_stop_words_are_the_tasks_languages(task, go_task):
    assert prompts.stop_words(task) == prompts.STOP_WORDS
    assert "\nfunc" in prompts.stop_words(go_task) and "\ndef" not in prompts.stop_words(go_task)


def test_the_tool_agent_is_told_to_call_run_tests(task):
    content = prompts.first_tool_messages(task, "tests")[0]["content"]
    assert content.startswith(prompts.first_prompt(task, "tests"))
    assert content.endswith("Call run_tests with the complete corrected function to test it.")
    tool = prompts.run_tests_tool("docs")["function"]
    assert tool["name"] == prompts.RUN_TESTS and "examples from the docstring" in \
        tool["description"]
    assert tool["parameters"]["required"] == ["code"]


@pytest.mark.parametrize(("status", "detail", "example_only", "begins"), [
    ("failed", "AssertionError", False, "The code fails the tests:\nAssertionError"),
    ("failed", "AssertionError", True, "The code fails the examples from the docstring:"),
    ("rejected", "syntax error at line 1", False, "Not run: syntax error at line 1"),
    ("repeat", "attempt 1", False, "Not run: the code is the same as an earlier call, which "
                                   "failed:\nattempt 1"),
])
def test_each_tool_result_says_what_happened_and_asks_for_another_call(status, detail,
                                                                       example_only, begins):
    said = prompts.tool_result(status, detail, example_only)
    assert said.startswith(begins)
    assert said.endswith("\n\nChange the code and call run_tests again.")


def test_a_chat_attempt_stands_as_its_fenced_code_and_a_reply_without_code_as_said(task,
                                                                                   go_task):
    assert prompts.attempt_turn(task, "def f():\n    pass\n", "prose", "chat") == \
        "```python\ndef f():\n    pass\n```"
    assert prompts.attempt_turn(go_task, "func F() {}\n", "prose", "chat") == \
        "```go\nfunc F() {}\n```"
    assert prompts.attempt_turn(task, "  \n", "I could not find it.", "chat") == \
        "I could not find it."
    # A completion or primed model's turn is its function, unfenced, as it wrote it.
    assert prompts.attempt_turn(task, "def f():\n    pass\n", "x", "completion") == \
        "def f():\n    pass"


def test_a_chat_model_is_asked_again_for_one_fenced_block_of_the_whole_function(task):
    feedback = prompts.failure_feedback(task, "  AssertionError\n", False, "chat")
    assert feedback.startswith("Your code does not pass the tests:\nAssertionError\n\n")
    assert feedback.endswith("Fix bugs in has_close_elements. Reply with the complete corrected "
                             f"function `{task.signature or task.entry_point}` in one ```python "
                             "block.")


def test_a_continuing_model_is_asked_again_with_the_instruction_alone(task):
    assert prompts.rejection_feedback(task, "it does not define f.", "primed") == \
        "Your code was not run: it does not define f.\n\nFix bugs in has_close_elements."


def test_a_repeat_names_the_earlier_attempt_and_its_failure_when_there_was_one(task):
    with_failure = prompts.repeat_feedback(task, 2, "AssertionError\n", "completion")
    assert with_failure.startswith("Your code is the same as your attempt 2, which did not fix "
                                   "the bug; it failed with:\nAssertionError\n\nChange the code.")
    without = prompts.repeat_feedback(task, 1, " ", "completion")
    assert "which did not fix the bug\n\nChange the code." in without


def test_a_completion_prompt_is_the_turns_then_the_prompt_base(task):
    messages = [*prompts.first_messages(task, "tests"),
                {"role": "assistant", "content": "def f(): pass"},
                {"role": "user", "content": "Your code does not pass the tests."}]
    text = prompts.completion_prompt(messages, task.declaration)
    assert text == (prompts.first_prompt(task, "tests") + "\n\ndef f(): pass\n\nYour code does "
                    "not pass the tests.\n\n" + task.declaration).strip()


def test_the_rewrite_prompt_of_a_braced_language_is_its_first_prompt_less_the_buggy_code(go_task):
    """Go's first prompt, its prompt base and tests, with the buggy body taken out and the ask
    to write the function anew in place of the instruction."""
    rewrite = prompts.rewrite_prompt(go_task, "tests")
    first = prompts.first_prompt(go_task, "tests")
    assert go_task.buggy_solution.strip() not in rewrite
    assert rewrite.startswith(prompts.prompt_base(go_task, "tests").strip())
    assert go_task.test.strip() in rewrite and go_task.test.strip() in first
    assert rewrite.endswith(f"\nImplement {go_task.entry_point} so that it passes the tests.")
