"""The function-calling agent (`--humanfix-agent tools`) through both graph runners, driven by
recorded replies whose calls are written in the Hermes form (`models/toolcalls.py`)."""

from __future__ import annotations

import json

import pytest
from test_agent import (  # noqa: F401 (fixtures)
    TASK_ID, Recording, Replies, fenced, replay, replies, run, statuses, task, tasks)

from pytest_humanfix.agent import prompts
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.records import graded_round
from pytest_humanfix.reporting.summary import by_round
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.protocol import RunProtocol
from pytest_humanfix.settings import Settings


def called(code: str, said: str = "") -> str:
    """A reply that calls run_tests with `code`."""
    call = {"name": "run_tests", "arguments": {"code": code}}
    return (said + "\n" if said else "") + f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def code_of(reply: str) -> str:
    return reply.split("```python\n")[1].split("```")[0]


@pytest.fixture(scope="module")
def calls(replies: Replies) -> dict[str, str]:
    return {"fixed": called(code_of(replies.fixed)),
            "wrong": called(code_of(replies.wrong[0])),
            "wrong_2": called(code_of(replies.wrong[1])),
            "wrong_3": called(code_of(replies.wrong[2])),
            "wrong_again": called(code_of(replies.wrong_again))}


def tools_run(run, task, model, **settings):
    return run(task, model, agent="tools", **settings)


def test_a_failing_call_is_answered_with_the_values_and_a_second_call_fixes(
        tmp_path, task, calls, run):
    model = replay(tmp_path, TASK_ID, [calls["wrong"], calls["fixed"], calls["wrong_2"]])
    result, sandbox = tools_run(run, task, model, iters=3)
    assert result.outcome == "fixed" and statuses(result) == ["failed", "passed"]
    assert [a.tool_calls for a in result.attempts] == [1, 1]
    assert [a.round for a in result.attempts] == [0, 1] and result.fixed_round == 1
    # Every reply was offered the one tool, declared as OpenAI's API declares a function.
    assert model.tools == [[prompts.run_tests_tool("tests")]] * 2
    first, second = model.chats
    assert first == prompts.first_tool_messages(task, "tests")
    assert "Call run_tests with the complete corrected function" in first[0]["content"]
    # The second chat: the call, as the code it ran, then the tool's answer with the values.
    wrong = result.attempts[0].code.strip()
    assert second[:2] == [first[0], {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "run_tests", "arguments": json.dumps({"code": wrong})}}]}]
    assert second[2] == {"role": "tool", "tool_call_id": "call_1",
                         "content": result.attempts[0].feedback}
    assert result.attempts[0].feedback.startswith("The code fails the tests:\n")
    assert "assert True == False\n +  where True = has_close_elements(" \
        in result.attempts[0].feedback
    assert result.attempts[0].feedback.endswith("call run_tests again.")
    # The passing call ran the hidden tests: grading reuses that execution.
    assert len(sandbox.programs) == 2
    # The recorded reply keeps the call, so a replay of the record calls it again.
    assert result.attempts[1].reply == calls["fixed"]


def test_a_reply_without_a_call_ends_the_repair_with_its_code(tmp_path, task, replies, calls,
                                                              run):
    model = replay(tmp_path, TASK_ID, [calls["wrong"], replies.fixed, calls["wrong_2"]])
    result, sandbox = tools_run(run, task, model, iters=3)
    assert statuses(result) == ["failed", "graded"]
    assert [a.tool_calls for a in result.attempts] == [1, 0]
    assert len(model.chats) == 2  # nothing asked after it, though rounds were left
    assert result.outcome == "fixed" and result.final_attempt == 1 and result.fixed_round == 1
    assert result.attempts[1].feedback == ""


def test_a_reply_without_a_call_or_code_leaves_the_last_called_code(tmp_path, task, calls, run):
    model = replay(tmp_path, TASK_ID, [calls["wrong"], "I have tested it; it is correct now."])
    result, _ = tools_run(run, task, model, iters=3)
    assert statuses(result) == ["failed", "rejected"]
    assert result.final_attempt == 0 and result.code == result.attempts[0].code
    assert result.outcome == "unfixed" and len(model.chats) == 2


def test_a_first_reply_without_a_call_is_graded_as_a_plain_first_attempt(tmp_path, task,
                                                                        replies, run):
    model = replay(tmp_path, TASK_ID, [replies.fixed, replies.wrong[0]])
    result, _ = tools_run(run, task, model, iters=3)
    assert statuses(result) == ["graded"] and result.attempts[0].tool_calls == 0
    assert result.outcome == "fixed" and result.fixed_round == 0


def test_iters_bounds_the_calls_after_the_first(tmp_path, task, calls, run):
    model = replay(tmp_path, TASK_ID, [calls["wrong"], calls["wrong_2"], calls["wrong_3"],
                                       calls["fixed"]])
    result, sandbox = tools_run(run, task, model, iters=2)
    assert statuses(result) == ["failed", "failed", "failed"] and len(model.chats) == 3
    assert [a.round for a in result.attempts] == [0, 1, 2]
    # The last call's result is not told: nothing would be asked after it.
    assert [bool(a.feedback) for a in result.attempts] == [True, True, False]
    assert result.outcome == "unfixed" and result.final_attempt == 2
    assert len(sandbox.programs) == 3


def test_only_the_first_of_several_calls_in_a_reply_is_run(tmp_path, task, calls, run):
    both = calls["wrong"] + "\n" + calls["fixed"]
    model = replay(tmp_path, TASK_ID, [both, calls["fixed"]])
    result, sandbox = tools_run(run, task, model, iters=1)
    assert statuses(result) == ["failed", "passed"]
    assert [a.tool_calls for a in result.attempts] == [2, 1]
    assert len(model.chats[1][1]["tool_calls"]) == 1  # the conversation holds the call run
    assert result.fixed_round == 1


def test_a_repeated_call_is_asked_again_hotter_then_told_it_repeats(tmp_path, task, calls, run):
    model = replay(tmp_path, TASK_ID, [calls["wrong"], calls["wrong_again"],
                                       calls["wrong_again"], calls["fixed"]])
    result, sandbox = tools_run(run, task, model, iters=2, ask_again_temperature=(0.7,))
    assert statuses(result) == ["failed", "repeat", "repeat", "passed"]
    assert [a.round for a in result.attempts] == [0, 1, 1, 2]
    assert [a.temperature for a in result.attempts] == [0.0, 1.0, 0.7, 1.0]
    assert model.chats[1] == model.chats[2]  # the ask again: the same conversation
    told = result.attempts[2].feedback
    assert told.startswith("Not run: the code is the same as an earlier call, which failed:\n")
    assert " +  where True = has_close_elements(" in told
    assert model.chats[3][-1] == {"role": "tool", "tool_call_id": "call_3", "content": told}
    assert len(sandbox.programs) == 2 and result.fixed_round == 2


def test_calls_written_as_bare_json_are_run_as_calls(tmp_path, task, replies, calls, run):
    # As Qwen2.5-Coder-0.5B writes them: first in a json block named after the function, then
    # as a bare line, twice.
    written = "```json\n" + json.dumps({"name": task.entry_point, "arguments": {
        "code": code_of(replies.wrong[0])}}, indent=2) + "\n```"
    line = json.dumps({"name": "run_tests", "arguments": {"code": code_of(replies.fixed)}})
    model = replay(tmp_path, TASK_ID, [written, line + "\n" + line])
    result, sandbox = tools_run(run, task, model, iters=1)
    assert statuses(result) == ["failed", "passed"]
    assert [a.tool_calls for a in result.attempts] == [1, 2]
    assert result.attempts[0].reply == written  # as it was written, for a replay to read again
    # It stands in the conversation as a call of the tool, in the template's form.
    assert model.chats[1][1]["tool_calls"][0]["function"]["name"] == "run_tests"
    assert result.fixed_round == 1


def test_a_call_that_fails_the_check_is_answered_with_why(tmp_path, task, replies, calls, run):
    no_code = '<tool_call>\n{"name": "run_tests", "arguments": {"source": "x"}}\n</tool_call>'
    syntax = called(code_of(replies.syntax_error))
    model = replay(tmp_path, TASK_ID, [no_code, syntax, calls["fixed"]])
    result, sandbox = tools_run(run, task, model, iters=2)
    assert statuses(result) == ["rejected", "rejected", "passed"]
    assert result.attempts[0].feedback.startswith("Not run: the reply holds no code.")
    assert "syntax error" in result.attempts[1].feedback
    assert len(sandbox.programs) == 1 and result.fixed_round == 2


def test_the_docs_variant_runs_the_examples_on_a_call(tmp_path, task, replies, calls, run):
    examples_only = called(code_of(replies.examples_only))
    model = replay(tmp_path, TASK_ID, [calls["wrong"], examples_only, calls["fixed"]])
    result, sandbox = tools_run(run, task, model, iters=2, variant="docs")
    assert statuses(result) == ["failed", "passed"]
    assert [a.tests for a in result.attempts] == ["example_test", "example_test"]
    assert result.attempts[0].feedback.startswith(
        "The code fails the examples from the docstring:\n")
    assert model.tools[0] == [prompts.run_tests_tool("docs")]
    assert "examples from the docstring" in \
        model.tools[0][0]["function"]["description"]
    assert result.outcome == "unfixed"  # graded on the hidden tests


def test_the_controls_call_the_tool_and_score_as_they_must(task, dataset, run):
    for spec, outcome in (("canonical", "fixed"), ("buggy", "unfixed")):
        model = Recording(load_model(spec, GenerationConfig.of(Settings())))
        result, _ = tools_run(run, task, model, iters=1)
        assert result.outcome == outcome
        assert all(a.tool_calls == 1 for a in result.attempts)


def test_the_records_rounds_figures_and_protocol_agree(tmp_path, tasks, dataset, calls, replies):
    """Two tasks through the Runner: pass@1 by round counts what the records say."""
    path = tmp_path / "replies.jsonl"
    other = tasks["Python/2"]
    rows = [(TASK_ID, c) for c in (calls["wrong"], calls["wrong_2"], calls["fixed"])]
    rows.append((other.task_id, called(other.buggy_code)))
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    runner = Runner(Settings(model=f"replay:{path}", dataset=str(dataset), iters=3,
                             agent="tools"), RunState("run-tools"))
    records = [json.loads(json.dumps(runner.record(runner.evaluate(t))))
               for t in (tasks[TASK_ID], other)]
    assert [r["protocol"]["agent"] for r in records] == ["tools", "tools"]
    assert [graded_round(r) for r in records] == [2, None]
    assert [(row["round"], row["fixed"]) for row in by_round(records)] == \
        [(0, 0), (1, 0), (2, 1), (3, 1)]
    # The buggy call repeats itself: asked again at each ask-again temperature, every round.
    assert [a["status"] for a in records[1]["attempts"]][:4] == \
        ["failed", "repeat", "repeat", "repeat"]
    assert all(a["tool_calls"] == 1 for r in records for a in r["attempts"])
    # Repair's protocol leaves the agent out (named: it need not be the default).
    repair = Settings(iters=3, agent="repair")
    assert RunProtocol.of(repair, "python").to_json().get("agent") is None


@pytest.mark.parametrize(("arguments", "message"), [
    # The in-process engine does not answer tool calls: a served model does.
    (["--humanfix-model=smollm2"], "*--humanfix-agent tools needs a server that answers tool "
     "calls, and the in-process transformers engine does not: add --humanfix-serve*"),
    (["--humanfix-model=canonical", "--humanfix-prompt=completion"],
     "*--humanfix-agent tools talks with the model through the chat API, and "
     "--humanfix-prompt completion does not: use --humanfix-prompt chat*"),
    (["--humanfix-model=canonical", "--humanfix-iters=1", "--humanfix-agent=planner"],
     "*--humanfix-agent / humanfix_agent: 'planner' must be repair, tools, resample, "
     "rewrite, module:callable or path/to/file.py:callable*"),
])
def test_what_the_tools_agent_cannot_run_is_a_usage_error(humanfix_pytester, arguments,
                                                          message):
    agent = [] if any(a.startswith("--humanfix-agent") for a in arguments) else \
        ["--humanfix-agent=tools"]
    result = humanfix_pytester.runpytest(*arguments, *agent)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    result.stdout.no_fnmatch_line("*passed*")


def test_the_agent_is_read_from_the_ini_file_and_recorded(humanfix_pytester, read_records):
    humanfix_pytester.makeini("[pytest]\naddopts = -p no:randomly\nhumanfix_agent = tools\n")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical", "--humanfix-max=2",
                                         "--humanfix-iters=1")
    assert result.ret == pytest.ExitCode.OK
    records = read_records()
    assert [r["protocol"]["agent"] for r in records] == ["tools", "tools"]
    assert all(a["tool_calls"] == 1 for r in records for a in r["attempts"])
