"""Our llama.cpp engine's reading of OpenAI's request fields, and the answer it writes; no
model is loaded (the engine's context size and reply are given)."""

import pytest

from pytest_humanfix.models.engines.llamacpp.chat import with_call_objects
from pytest_humanfix.models.engines.llamacpp.jobs import Job, RequestError
from pytest_humanfix.models.engines.llamacpp.protocol import (ChatLayout, answer, chat_layout,
                                                              new_job, offered_tools)

TOOL = {"type": "function", "function": {"name": "run_tests", "parameters": {}}}


class Engine:
    """What `new_job` and `answer` read of a BatchedModel."""

    context = 100

    def __init__(self, reply: str = "") -> None:
        self.reply = reply

    def reply_text(self, job: Job) -> str:
        return self.reply


def test_a_chat_ends_with_the_generation_prompt_unless_it_continues_the_final_message():
    assert chat_layout({}) == ChatLayout(generation_prompt=True, continue_final=False)
    primed = {"continue_final_message": True,
              "messages": [{"role": "user", "content": "fix"},
                           {"role": "assistant", "content": "def f():"}]}
    assert chat_layout(primed) == ChatLayout(generation_prompt=False, continue_final=True)


@pytest.mark.parametrize(("body", "says"), [
    ({"continue_final_message": True, "add_generation_prompt": True,
      "messages": [{"role": "assistant", "content": "x"}]}, "cannot both be true"),
    ({"continue_final_message": True, "messages": [{"role": "user", "content": "x"}]},
     "final assistant message"),
    ({"continue_final_message": "yes"}, "true or false"),
])
def test_a_layout_that_cannot_be_served_is_refused(body, says):
    with pytest.raises(RequestError, match=says):
        chat_layout(body)


def test_tools_are_offered_only_as_functions_with_the_model_choosing():
    assert offered_tools({}) is None and offered_tools({"tools": []}) is None
    assert offered_tools({"tools": [TOOL]}) == [TOOL]
    with pytest.raises(RequestError, match="list of"):
        offered_tools({"tools": [{"type": "function"}]})
    with pytest.raises(RequestError, match="tool_choice"):
        offered_tools({"tools": [TOOL], "tool_choice": "required"})


def test_a_job_takes_openais_defaults_and_the_room_the_slot_leaves():
    job = new_job(Engine(), {"stop": "\n\n"}, list(range(40)), ["<|im_end|>"], 9)  # type: ignore[arg-type]
    assert (job.max_tokens, job.temperature, job.top_p, job.seed) == (60, 1.0, 1.0, 9)
    assert job.stop == ["<|im_end|>", "\n\n"] and job.scanner is not None
    greedy = new_job(Engine(), {"max_tokens": 500, "temperature": 0, "seed": 3}, [1], [], 9)  # type: ignore[arg-type]
    assert (greedy.max_tokens, greedy.temperature, greedy.seed) == (99, 0.0, 3)
    assert greedy.scanner is None


@pytest.mark.parametrize(("body", "prompt", "says"), [
    ({"stream": True}, [1], "streaming"), ({"n": 2}, [1], "n=1"),
    ({}, list(range(100)), "raise --n_ctx"), ({"max_tokens": 0}, [1], "at least 1"),
    ({"temperature": "hot"}, [1], "not a number"),
    ({"humanfix_function_end": "indent"}, [1], "completions only"),
])
def test_a_request_the_engine_cannot_serve_says_why(body, prompt, says):
    with pytest.raises(RequestError, match=says):
        new_job(Engine(), body, prompt, [], 0)  # type: ignore[arg-type]


def test_a_chat_reply_with_calls_is_answered_as_openais_tool_calls():
    job = Job([1, 2], 10, [], 0.0, 1.0, 0, tokens=[5, 6, 7], cached=1, finish_reason="stop")
    engine = Engine('<tool_call>\n{"name": "run_tests", "arguments": {"code": "x"}}\n</tool_call>')
    said = answer(job, engine, "chat", "tiny", tools=True)  # type: ignore[arg-type]
    choice = said["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "run_tests"
    assert said["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5,
                             "prompt_tokens_details": {"cached_tokens": 1}}
    plain = answer(job, engine, "completion", "tiny")  # type: ignore[arg-type]
    assert plain["object"] == "text_completion" and plain["choices"][0]["text"] == engine.reply


def test_a_calls_arguments_are_given_to_the_template_as_the_object_they_write():
    call = {"id": "c1", "type": "function",
            "function": {"name": "run_tests", "arguments": '{"code": "x"}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    laid = with_call_objects(message)
    assert laid["content"] == ""
    assert laid["tool_calls"][0]["function"]["arguments"] == {"code": "x"}
    assert with_call_objects({"role": "user", "content": "hi"}) == {"role": "user",
                                                                      "content": "hi"}
    with pytest.raises(RequestError, match="not JSON text"):
        with_call_objects({**message, "tool_calls": [
            {**call, "function": {"name": "f", "arguments": "{"}}]})
