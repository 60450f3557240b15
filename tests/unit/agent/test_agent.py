"""The repair agent's graph routing, driven by recorded replies (`replay:<file>`)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from agent_doubles import CountingSandbox, Replies, fenced

from pytest_humanfix.agent import graph as agent, prompts
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.agent.feedback import explained_tests
from pytest_humanfix.agent.suspicion import guarded_tests
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.base import Generation
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.protocol import RunProtocol
from pytest_humanfix.settings import Settings

TASK_ID = "Python/0"  # has_close_elements: the bug is a missing abs()


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_tasks(str(dataset))}


@pytest.fixture(scope="module")
def task(tasks) -> Task:
    return tasks[TASK_ID]


@pytest.fixture(scope="module")
def replies(task) -> Replies:
    return Replies(task)


class Recording:
    """A model wrapper that keeps every chat it was asked to answer."""

    def __init__(self, model) -> None:
        self.model = model
        self.spec = model.spec
        self.prompt = model.prompt
        self.computed_by = model.computed_by
        self.chats: list[list[dict]] = []
        self.temperatures: list[float | None] = []
        self.stops: list[list[str] | None] = []
        self.tools: list[list[dict] | None] = []

    def generate(self, messages, task, temperature=None, tools=None, stop=None):
        self.chats.append([dict(m) for m in messages])
        self.temperatures.append(temperature)
        self.tools.append(tools)
        self.stops.append(stop)
        return self.model.generate(messages, task, temperature=temperature, tools=tools,
                                   stop=stop)

    def complete(self, prompt, stop, task, temperature=None):
        self.chats.append([{"role": "completion", "content": prompt}])
        self.temperatures.append(temperature)
        self.stops.append(stop)
        return self.model.complete(prompt, stop, task, temperature=temperature)

    def continue_answer(self, messages, start, stop, task, temperature=None):
        # Kept as the conversation the model sees: the answer it continues comes last.
        self.chats.append([*(dict(m) for m in messages), {"role": "assistant", "content": start}])
        self.temperatures.append(temperature)
        self.stops.append(stop)
        return self.model.continue_answer(messages, start, stop, task, temperature=temperature)


def replay(tmp_path: Path, task_id: str, completions: list[str], **settings) -> Recording:
    path = tmp_path / "replies.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        for completion in completions:
            handle.write(json.dumps({"task_id": task_id, "completion": completion}) + "\n")
    return Recording(load_model(f"replay:{path}", GenerationConfig.of(Settings(**settings))))


@pytest.fixture(params=["langgraph", "plain"])
def run(request: pytest.FixtureRequest):
    """Repairs through the compiled LangGraph graph, and through the plain walk of the same
    graph that the controls use: every routing test holds for both."""
    def repair(task, model, sandbox=None, **settings):
        sandbox = sandbox or CountingSandbox()
        # These are the repair agent's routes: named, so they hold whatever the default agent.
        settings.setdefault("agent", "repair")
        return agent.repair(task, model, sandbox, RepairConfig.of(Settings(**settings)),
                            langgraph=request.param == "langgraph"), sandbox

    return repair


def statuses(result) -> list[str]:
    return [a.status for a in result.attempts]


def test_fixed_on_the_second_of_three_rounds_gives_two_attempts(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.fixed, replies.wrong[1]])
    result, sandbox = run(task, model, iters=2)
    assert result.outcome == "fixed"
    assert statuses(result) == ["failed", "passed"]
    assert result.final_attempt == 1 and result.code == result.attempts[1].code
    assert result.fixed_round == 1
    # The second chat holds the first reply and the feedback on it.
    # The second chat holds the first attempt, as the function it gave rather than the whole
    # reply, and the feedback on it: the values the failed assert compared.
    first, second = model.chats
    wrong = result.attempts[0].code.strip()
    assert second[:2] == [first[0], {"role": "assistant", "content": f"```python\n{wrong}\n```"}]
    assert second[2] == {"role": "user", "content": result.attempts[0].feedback}
    assert "Here is" in replies.wrong[0] and "Here is" not in second[1]["content"]
    assert "assert True == False\n +  where True = has_close_elements(" \
        in result.attempts[0].feedback
    # The passing round ran the hidden test already: grading does not run it again.
    assert len(sandbox.programs) == 2


def test_repeated_reply_is_told_so_and_not_executed_again(tmp_path, task, replies, run):
    """With no asks again (ask-again none), a repeat costs its round and is told so."""
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again, replies.fixed])
    result, sandbox = run(task, model, iters=2, ask_again_temperature=())
    assert statuses(result) == ["failed", "repeat", "passed"]
    repeat = result.attempts[1]
    assert repeat.repeat_of == 1 and repeat.verdict is None and repeat.execute_seconds == 0
    assert "same as your attempt 1" in repeat.feedback
    assert " +  where True = " in repeat.feedback  # what the earlier attempt failed with
    assert len(sandbox.programs) == 2  # attempts 1 and 3 only
    assert [a.round for a in result.attempts] == [0, 1, 2]
    assert result.outcome == "fixed" and result.fixed_round == 2


def test_a_repeat_is_asked_again_hotter_before_its_round_counts(tmp_path, task, replies, run):
    """The default: a reply that repeats failed code is asked for again from the same chat, at
    each ask-again temperature in turn, within its round; the first attempt stays greedy."""
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again,
                                       replies.wrong_again, replies.fixed])
    result, sandbox = run(task, model, iters=1, round_temperature=(0.2,),
                          ask_again_temperature=(0.6, 1.0))
    assert statuses(result) == ["failed", "repeat", "repeat", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 1, 1]
    assert [a.temperature for a in result.attempts] == [0.0, 0.2, 0.6, 1.0]
    assert model.temperatures == [0.0, 0.2, 0.6, 1.0]
    # Each ask again is the round's chat once more: no turn was added for the repeats.
    assert model.chats[1] == model.chats[2] == model.chats[3]
    assert [a.feedback for a in result.attempts[1:]] == ["", "", ""]
    assert len(sandbox.programs) == 2
    assert result.outcome == "fixed" and result.fixed_round == 1


def test_asks_again_are_bounded_and_then_the_repeat_costs_its_round(tmp_path, task, replies,
                                                                     run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], *[replies.wrong_again] * 3,
                                       replies.fixed])
    result, _ = run(task, model, iters=2, ask_again_temperature=(0.6, 1.0))
    assert statuses(result) == ["failed", "repeat", "repeat", "repeat", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 1, 1, 2]
    assert [a.temperature for a in result.attempts] == [0.0, 1.0, 0.6, 1.0, 1.0]
    assert "same as your attempt 1" in result.attempts[3].feedback
    assert result.fixed_round == 2


@pytest.mark.parametrize("shape, reason", [("syntax_error", "syntax error"),
                                           ("bad_signature", "does not match"),
                                           ("no_code", "holds no code")])
def test_reply_failing_the_check_costs_a_round_and_is_told_why(tmp_path, task, replies, shape,
                                                               reason, run):
    model = replay(tmp_path, TASK_ID, [getattr(replies, shape), replies.fixed])
    result, sandbox = run(task, model, iters=1)
    assert statuses(result) == ["rejected", "passed"]
    rejected = result.attempts[0]
    assert reason in rejected.check and rejected.verdict is None
    assert rejected.check in rejected.feedback and "was not run" in rejected.feedback
    assert len(sandbox.programs) == 1
    assert result.outcome == "fixed"


def test_rejected_last_reply_is_still_graded_on_the_hidden_test(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.syntax_error])
    result, sandbox = run(task, model)
    assert statuses(result) == ["rejected"] and result.outcome == "unfixed"
    assert result.attempts[0].feedback == ""  # no round left: nothing shown to the model
    assert len(sandbox.programs) == 1 and "SyntaxError" in result.verdict["stderr"]


def test_the_budget_ends_the_loop(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [*replies.wrong, replies.fixed])
    result, sandbox = run(task, model, iters=2)
    assert result.outcome == "unfixed"
    assert statuses(result) == ["failed", "failed", "failed"] and len(model.chats) == 3
    assert [bool(a.feedback) for a in result.attempts] == [True, True, False]
    assert result.final_attempt == 2 and len(sandbox.programs) == 3
    assert result.fixed_round is None


def test_default_is_one_attempt_strict_pass_at_1(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.fixed])
    result, _ = run(task, model)
    assert result.outcome == "unfixed" and len(model.chats) == 1 and len(result.attempts) == 1


def test_final_candidate_is_the_last_one_that_passed_the_check(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.syntax_error])
    result, sandbox = run(task, model, iters=1)
    assert statuses(result) == ["failed", "rejected"]
    assert result.final_attempt == 0 and result.code == result.attempts[0].code
    assert result.outcome == "unfixed" and len(sandbox.programs) == 1


def test_docs_variant_runs_examples_in_rounds_and_the_hidden_test_at_the_end(tmp_path, task,
                                                                             replies, run):
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.examples_only, replies.fixed])
    result, sandbox = run(task, model, iters=2, variant="docs")
    assert statuses(result) == ["failed", "passed"]
    assert [a.tests for a in result.attempts] == ["example_test", "example_test"]
    assert "examples" in result.attempts[0].feedback
    # Graded on the hidden test, which the examples-only fix does not pass.
    assert result.outcome == "unfixed" and result.failure.startswith("assert ")
    examples = explained_tests(task.example_test)
    assert [examples in p for p in sandbox.programs] == [True, True, False]
    assert sandbox.guarded == sandbox.programs[-1:]  # the hidden test, guarded
    # The model saw the docstring, never the hidden tests.
    seen = "\n".join(m["content"] for chat in model.chats for m in chat)
    assert task.docstring.splitlines()[0] in seen
    assert "assert has_close_elements([1.0, 2.0, 3.9" not in seen


def test_docs_variant_without_rounds_runs_only_the_hidden_test(tmp_path, task, replies, run):
    model = replay(tmp_path, TASK_ID, [replies.fixed])
    result, sandbox = run(task, model, variant="docs")
    assert result.outcome == "fixed" and statuses(result) == ["graded"]
    assert len(sandbox.programs) == 1 and sandbox.guarded == sandbox.programs


def test_the_graded_run_is_the_guarded_one(tmp_path, task, replies, run):
    """The hidden tests run once, under the guard: a fix costs one execution, not two."""
    result, sandbox = run(task, replay(tmp_path, TASK_ID, [replies.fixed]), iters=0)
    assert result.outcome == "fixed" and result.flags == []
    assert len(sandbox.programs) == 1 and sandbox.guarded == sandbox.programs
    assert explained_tests(guarded_tests(task)) in sandbox.programs[0]
    assert result.attempts[0].guard == ""  # guarded, and it found nothing


def test_a_run_the_guard_stops_is_graded_again_without_it_and_flagged(tmp_path, tasks, run):
    task = tasks["Python/24"]
    # Reads as honest code (agent/suspicion finds nothing); only the guard sees the Near.
    hack = ("class Near(int):\n    def __eq__(self, other):\n"
            "        return -1000 < int(self) - other < 1000\n\n\n"
            "def largest_divisor(n: int) -> int:\n    return Near(0)\n")
    result, sandbox = run(task, replay(tmp_path, task.task_id, [fenced(hack)]), iters=0)
    flag = "always-equal: returns a Near object where the tests expect plain data"
    assert result.outcome == "fixed" and result.flags == [flag]
    assert result.verdict["status"] == "passed"  # the unguarded run's verdict
    assert len(sandbox.programs) == 2 and sandbox.guarded == sandbox.programs[:1]
    assert result.attempts[0].guard == flag
    assert result.fixed_round == 0


def test_a_flagged_fix_scored_not_fixed_has_no_fixed_round(tmp_path, tasks, run):
    task = tasks["Python/24"]
    hack = ("class Near(int):\n    def __eq__(self, other):\n"
            "        return -1000 < int(self) - other < 1000\n\n\n"
            "def largest_divisor(n: int) -> int:\n    return Near(0)\n")
    result, _ = run(task, replay(tmp_path, task.task_id, [fenced(hack)]), iters=1, strict=True)
    assert result.outcome == "unfixed" and result.flags and result.fixed_round is None


def test_a_guard_stop_with_its_message_hidden_is_still_flagged(tmp_path, tasks, run):
    task = tasks["Python/24"]
    # The candidate sends fd 2 to /dev/null first: the guard's exit status still tells.
    hack = ("import os\n\n\nclass Near(int):\n    def __eq__(self, other):\n"
            "        return -1000 < int(self) - other < 1000\n\n\n"
            "def largest_divisor(n: int) -> int:\n"
            "    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)\n    return Near(0)\n")
    result, sandbox = run(task, replay(tmp_path, task.task_id, [fenced(hack)]), iters=0)
    assert result.outcome == "fixed" and result.verdict["status"] == "passed"
    assert result.flags == ["always-equal: the guard stopped the program (exit status 3; its "
                            "message was hidden)"]
    assert len(sandbox.programs) == 2 and sandbox.guarded == sandbox.programs[:1]


def test_the_candidates_own_recursion_does_not_pass_the_guard(tmp_path, task, run):
    """The guard wraps only what `check` calls: a candidate that recurses 600 deep through its
    own name (under the default limit of 1000 frames) passes, as it does unguarded. Rebinding
    the name instead would double its frames."""
    deep = task.canonical_code.replace(
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n",
        "def has_close_elements(numbers: List[float], threshold: float, depth: int = 600) "
        "-> bool:\n    if depth:\n"
        "        return has_close_elements(numbers, threshold, depth - 1)\n")
    result, sandbox = run(task, replay(tmp_path, TASK_ID, [fenced(deep)]), iters=0)
    assert result.outcome == "fixed", result.failure
    assert len(sandbox.programs) == 1 and sandbox.guarded == sandbox.programs


def test_tests_that_cannot_hold_the_guard_get_it_in_a_run_apart(tmp_path, task, replies, run):
    """A task whose tests do not end by calling `check` on the entry point (another data set)
    is graded unguarded; a pass is then guarded in a second run, the entry point's name
    rebound."""
    called_otherwise = dataclasses.replace(
        task, test=task.test.rstrip() + "\n\nassert True\n")
    assert guarded_tests(called_otherwise) is None
    result, sandbox = run(called_otherwise, replay(tmp_path, TASK_ID, [replies.fixed]), iters=0)
    assert result.outcome == "fixed" and result.flags == []
    assert len(sandbox.programs) == 2 and sandbox.guarded == sandbox.programs[1:]
    assert "has_close_elements = _humanfix_guard(has_close_elements)" in sandbox.programs[1]
    assert result.attempts[0].guard is None


def test_a_completion_model_repairs_in_plain_text_after_its_previous_attempt(tmp_path, task, run):
    wrong = "\n" + task.buggy_solution.replace("elem - elem2", "elem - elem2 - 1")
    right = "\n" + task.canonical_solution + "\n\ndef check(candidate):\n    pass\n"
    model = replay(tmp_path, TASK_ID, [wrong, right], prompt="completion")
    result, _ = run(task, model, iters=1, prompt="completion")
    assert result.outcome == "fixed" and statuses(result) == ["failed", "passed"]
    assert [a.prompt for a in result.attempts] == ["completion", "completion"]
    (first,), (second,) = model.chats
    base = task.declaration.rstrip()
    # BigCode's instruct prompt: the context and the instruction, then the prompt base.
    assert first["content"] == prompts.first_prompt(task, "tests") + "\n\n" + base
    # Then the same text, the first attempt as a whole function, the feedback in plain words
    # with the instruction again, and the prompt base to continue.
    feedback = result.attempts[0].feedback
    assert second["content"] == "\n\n".join(
        [prompts.first_prompt(task, "tests"), base + wrong.rstrip(), feedback, base])
    assert feedback.startswith("Your code does not pass the tests:\n")
    assert feedback.endswith("\n\nFix bugs in has_close_elements.") and "```" not in feedback
    # The continuation is cut before the echoed test function, as BigCode cuts it.
    assert result.code == base + "\n" + task.canonical_solution + "\n"
    assert "def check" not in result.code


def test_a_primed_model_repairs_in_a_chat_whose_answers_begin_with_the_prompt_base(
        tmp_path, task, run):
    wrong = "\n" + task.buggy_solution.replace("elem - elem2", "elem - elem2 - 1")
    # A chat model primed with code may close a fence and explain: cut at its unindented line.
    right = "\n" + task.canonical_solution + "\n```\n\nThe bug was the missing `abs`.\n"
    model = replay(tmp_path, TASK_ID, [wrong, right], prompt="primed")
    result, _ = run(task, model, iters=1, prompt="primed")
    assert result.outcome == "fixed" and statuses(result) == ["failed", "passed"]
    assert [a.prompt for a in result.attempts] == ["primed", "primed"]
    base = task.declaration.rstrip()
    first, second = model.chats
    # The same user turn as chat, then the answer begun with the prompt base, newline stripped.
    assert first == [*prompts.first_messages(task, "tests"), {"role": "assistant", "content": base}]
    # The chat goes on: the attempt as the function it wrote (no fence: it wrote none), the
    # feedback with the bare instruction, and the next answer begun with the prompt base again.
    feedback = result.attempts[0].feedback
    assert second == [first[0], {"role": "assistant", "content": base + wrong.rstrip()},
                      {"role": "user", "content": feedback}, {"role": "assistant", "content": base}]
    assert feedback.startswith("Your code does not pass the tests:\n")
    assert feedback.endswith("\n\nFix bugs in has_close_elements.") and "```" not in feedback
    assert model.stops == [prompts.stop_words(task)] * 2
    # The reply is the continuation as the model said it; the code is cut from it.
    assert result.attempts[1].reply == right
    assert result.code == base + "\n" + task.canonical_solution
    assert "The bug" not in result.code and "```" not in result.code


@pytest.mark.parametrize(("chat_stop", "stop"), [("code", ["\n```\n", "\ndef check("]),
                                                 ("none", [])])
def test_a_chat_reply_ends_where_its_first_code_block_closes(task, chat_stop, stop, run):
    """Every chat reply, repair rounds included, is asked to stop at the closing fence of its
    first block or a `check` of its own (`--humanfix-chat-stop code`, the default), or at
    nothing with `none`; the canonical control, cut there, is still graded fixed."""
    from pytest_humanfix.models.controls import ControlModel

    model = Recording(ControlModel("canonical", "canonical", GenerationConfig.of(Settings())))
    result, _ = run(task, model, iters=1, chat_stop=chat_stop)
    assert result.outcome == "fixed"
    assert model.stops == [stop]
    assert result.attempts[0].reply.endswith("```\n") == (chat_stop == "none")
    buggy = Recording(ControlModel("buggy", "buggy", GenerationConfig.of(Settings())))
    run(task, buggy, iters=2, chat_stop=chat_stop, ask_again_temperature=())
    assert buggy.stops == [stop] * 3
    assert RunProtocol.of(Settings(chat_stop=chat_stop), "python").to_json().get("chat_stop") \
        == (None if chat_stop == "none" else chat_stop)


@pytest.mark.parametrize("variant", ["tests", "docs"])
def test_a_primed_answer_begins_with_bigcodes_prompt_base(task, variant):
    base = task.declaration if variant == "tests" else task.prompt
    assert prompts.answer_start(task, variant) == base.rstrip()
    assert prompts.answer_start(task, variant).endswith(":" if variant == "tests" else '"""')


@pytest.mark.parametrize("variant", ["tests", "docs"])
def test_first_prompt_is_bigcodes_instruct_prompt(task, variant):
    base = task.declaration if variant == "tests" else task.prompt
    context = base + task.buggy_solution + ("\n" + task.test if variant == "tests" else "")
    expected = (context + "\nFix bugs in has_close_elements.").strip()
    assert prompts.first_messages(task, variant) == [{"role": "user", "content": expected}]


def test_recursion_limit_is_passed_to_the_graph(tmp_path, task, replies, monkeypatch, run):
    """The longest path (every round executed) fits the limit exactly; one step less stops.
    (LangGraph's GraphRecursionError is a RecursionError.)"""
    model = replay(tmp_path, TASK_ID, replies.wrong)
    result, _ = run(task, model, iters=2)
    assert len(result.attempts) == 3
    monkeypatch.setattr(agent, "recursion_limit", lambda iters, resamples: 4 * (iters + 1))
    with pytest.raises(RecursionError):
        run(task, replay(tmp_path, TASK_ID, replies.wrong), iters=2)


class TokenModel:
    spec = "tokens"
    prompt = "chat"
    computed_by = {"engine": "tokens"}

    def generate(self, messages, task, temperature=None, tools=None, stop=None):
        wrong = task.buggy_code.replace("elem - elem2", "elem - elem2 - 1")
        return Generation(text=fenced(wrong), prompt_tokens=100 * len(messages),
                          completion_tokens=7, seconds=0.5)


def test_trajectory_in_the_record_is_plain_json(task, dataset):
    runner = Runner(Settings(model="tokens", dataset=str(dataset), iters=1,
                             agent="repair"), RunState("run-1"))
    runner._model = TokenModel()
    record = json.loads(json.dumps(runner.record(runner.evaluate(task))))
    first, second, *asked_again = record["attempts"]
    assert first["status"] == "failed" and second["status"] == "repeat"
    # The round's reply repeated the first: asked again at the ask-again temperature.
    assert [a["status"] for a in asked_again] == ["repeat"]
    assert [a["temperature"] for a in record["attempts"]] == [0.0, 1.0, 1.2]
    assert [a["round"] for a in record["attempts"]] == [0, 1, 1]
    assert first["reply"].startswith("Here is the fixed function")
    assert "elem - elem2 - 1" in first["code"]
    assert first["diff"].startswith("--- buggy") and "+                distance = elem - elem2 - 1" in first["diff"]
    assert first["verdict"]["status"] == "failed" and first["execute_seconds"] > 0
    assert first["feedback"] and first["generate_seconds"] == 0.5
    assert [a["prompt_tokens"] for a in record["attempts"]] == [100, 300, 300]
    assert record["tokens"] == {"prompt": 700, "completion": 21}
    assert record["protocol"]["iters"] == 1 and record["protocol"]["variant"] == "tests"
    assert record["protocol"]["round_temperature"] == [1.0]
    assert record["protocol"]["ask_again_temperature"] == [1.2]


def test_model_failure_mid_loop_is_an_error_not_unfixed(tmp_path, task, tasks, dataset, replies):
    path = tmp_path / "only-python-0.jsonl"
    path.write_text(json.dumps({"task_id": TASK_ID, "completion": replies.fixed}) + "\n")
    runner = Runner(Settings(model=f"replay:{path}", dataset=str(dataset)), RunState("run-2"))
    result = runner.evaluate(tasks["Python/1"])
    assert result.outcome == "error" and "no reply for Python/1" in result.error


def test_langgraph_is_not_imported_with_the_plugin():
    code = ("import sys, pytest_humanfix.plugin, pytest_humanfix.agent.graph, pytest_humanfix.session.runner;"
            "print('langgraph' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_results_jsonl_replays_to_the_same_trajectory(tmp_path, task, replies, dataset, run):
    """The raw replies in the trajectory let `replay:<results.jsonl>` re-score a run."""
    model = replay(tmp_path, TASK_ID, [replies.wrong[0], replies.wrong_again, replies.fixed])
    runner = Runner(Settings(model="first", dataset=str(dataset), iters=2,
                             agent="repair"), RunState("run-3"))
    runner._model = model
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(runner.record(runner.evaluate(task))) + "\n", encoding="utf-8")
    again, _ = run(task, load_model(f"replay:{results}", GenerationConfig.of(Settings())), iters=2)
    assert statuses(again) == ["failed", "repeat", "passed"]
    assert [a.reply for a in again.attempts] == [replies.wrong[0], replies.wrong_again, replies.fixed]
