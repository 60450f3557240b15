"""The HTTP side of our llama.cpp engine (pytest_humanfix/models/engines/llamacpp/server.py) on a
stand-in for BatchedModel that loads no model: which path answers what, how a request reaches the
model (prompt, stop strings, chat layout, tools), and the status and error body of each refusal.
The real engine behind it: test_llamacpp_server.py."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from threading import Thread
from typing import Any

import pytest

from pytest_humanfix.models.engines.llamacpp.jobs import Job
from pytest_humanfix.models.engines.llamacpp.server import error, handler_for

CALL = '<tool_call>\n{"name": "run_tests", "arguments": {"code": "x"}}\n</tool_call>'
TOOL = {"type": "function", "function": {"name": "run_tests", "parameters": {}}}
PROPS = {"computed_by": {"engine": "llamacpp", "threads": 1}}


class Model:
    """What the handler reads of a BatchedModel: its prompts, its context, `submit` (which
    finishes each job at once, or fails it with `failure`) and the reply's text."""

    context = 64

    def __init__(self) -> None:
        self.prompts = self
        self.reset()

    def reset(self) -> None:
        self.reply = "def f(x):\n    return x + 1\n"
        self.failure = ""
        self.jobs: list[Job] = []
        self.chats: list[tuple[list[dict[str, Any]], bool, bool, object]] = []

    def chat_prompt(self, messages: list[dict[str, Any]], generation_prompt: bool = True,
                    continue_final: bool = False, tools: object = None
                    ) -> tuple[list[int], list[str]]:
        self.chats.append((messages, generation_prompt, continue_final, tools))
        return [1] * (3 * len(messages) + generation_prompt), ["<|im_end|>"]

    def completion_prompt(self, prompt: str) -> list[int]:
        return list(prompt.encode())

    def submit(self, job: Job) -> None:
        self.jobs.append(job)
        job.tokens, job.finish_reason, job.error = [5, 6], "stop", self.failure
        job.done.set()

    def reply_text(self, job: Job) -> str:
        return self.reply


def serve(model: Model, props: dict[str, Any] | None) -> ThreadingHTTPServer:
    """The handler on a free loopback port, in a thread; `shutdown` returns within 50 ms."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(model, "tiny", 7, props))  # type: ignore[arg-type]
    httpd.daemon_threads = True
    Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Model, int]]:
    model = Model()
    httpd = serve(model, PROPS)
    yield model, httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def model(served: tuple[Model, int]) -> Model:
    """The served stand-in, as new for each test."""
    served[0].reset()
    return served[0]


@pytest.fixture
def connection(served: tuple[Model, int]) -> Iterator[http.client.HTTPConnection]:
    """One HTTP/1.1 connection, kept open for the test's requests."""
    client = http.client.HTTPConnection("127.0.0.1", served[1], timeout=30)
    yield client
    client.close()


def call(connection: http.client.HTTPConnection, method: str, path: str,
         body: object = None, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    connection.request(method, path, data, {"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def refused(status: int, answer: dict[str, Any], code: int, kind: str, says: str) -> bool:
    return status == code and answer["error"]["type"] == kind and says in answer["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/models", "/models", "/v1/models/"])
def test_the_model_list_names_the_served_model(connection, path):
    assert call(connection, "GET", path) == (200, {"object": "list", "data": [
        {"id": "tiny", "object": "model", "owned_by": "pytest-humanfix"}]})


def test_health_and_props_answer_as_llama_server_does(connection):
    assert call(connection, "GET", "/health") == (200, {"status": "ok"})
    assert call(connection, "GET", "/props") == (200, PROPS)


def test_props_is_an_empty_object_when_none_are_given():
    httpd = serve(Model(), None)
    try:
        client = http.client.HTTPConnection("127.0.0.1", httpd.server_address[1], timeout=30)
        assert call(client, "GET", "/props") == (200, {})
        client.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_unknown_path_is_a_404_naming_it(connection):
    status, answer = call(connection, "GET", "/v1/nothing")
    assert refused(status, answer, 404, "not_found", "no such path: /v1/nothing")
    status, answer = call(connection, "POST", "/v1/embeddings", {"input": "x"})
    assert refused(status, answer, 404, "not_found", "no such path: /v1/embeddings")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"])
def test_a_chat_is_answered_with_the_models_reply_and_its_usage(connection, model, path):
    messages = [{"role": "user", "content": "Fix f."}]
    status, answer = call(connection, "POST", path, {
        "model": "tiny", "messages": messages, "stop": "\n\n", "max_tokens": 10})
    assert status == 200
    assert (answer["object"], answer["model"]) == ("chat.completion", "tiny")
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": model.reply}
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"]["prompt_tokens"] == 4 and answer["usage"]["completion_tokens"] == 2
    assert model.chats == [(messages, True, False, None)]
    job = model.jobs[0]
    # The template's stop strings, then the request's; the handler's seed when none is sent.
    assert job.stop == ["<|im_end|>", "\n\n"] and job.seed == 7 and job.max_tokens == 10
    assert not job.special


def test_a_primed_chat_is_laid_out_to_continue_its_final_message(connection, model):
    messages = [{"role": "user", "content": "Fix f."},
                {"role": "assistant", "content": "def f(x):"}]
    status, _ = call(connection, "POST", "/v1/chat/completions",
                     {"messages": messages, "continue_final_message": True})
    assert status == 200
    assert model.chats == [(messages, False, True, None)]


@pytest.mark.parametrize("path", ["/v1/completions", "/completions"])
def test_a_completion_sends_its_prompt_as_is_and_renders_special_tokens(connection, model,
                                                                         path):
    status, answer = call(connection, "POST", path, {"prompt": "def f(x):", "seed": 3})
    assert status == 200 and answer["object"] == "text_completion"
    assert answer["choices"][0]["text"] == model.reply
    job = model.jobs[0]
    assert job.prompt == list(b"def f(x):") and job.stop == [] and job.special
    assert job.seed == 3 and job.max_tokens == model.context - len(b"def f(x):")


def test_tool_calls_are_parsed_from_a_chat_that_offers_tools_only(connection, model):
    model.reply = CALL
    messages = [{"role": "user", "content": "Fix f."}]
    status, offered = call(connection, "POST", "/v1/chat/completions",
                           {"messages": messages, "tools": [TOOL]})
    assert status == 200 and offered["choices"][0]["finish_reason"] == "tool_calls"
    assert offered["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "run_tests"
    assert model.chats[0][3] == [TOOL]  # the template lays the tools out in the prompt
    _, plain = call(connection, "POST", "/v1/chat/completions", {"messages": messages})
    assert plain["choices"][0]["message"]["content"] == CALL
    _, completion = call(connection, "POST", "/v1/completions", {"prompt": "x", "tools": [TOOL]})
    assert completion["choices"][0]["text"] == CALL


@pytest.mark.parametrize(("path", "body", "says"), [
    ("/v1/chat/completions", [{"role": "user"}], "the body must be a JSON object"),
    ("/v1/completions", {"prompt": ["a", "b"]}, "`prompt` must be one string"),
    ("/v1/completions", {}, "`prompt` must be one string"),
    ("/v1/completions", {"prompt": "x", "stream": True}, "without `stream`"),
    ("/v1/chat/completions", {"messages": [], "tools": [{"type": "x"}]}, "`tools` is a list"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "continue_final_message": True}, "final assistant message"),
])
def test_a_request_that_cannot_be_served_is_a_400_that_says_why(connection, model, path, body,
                                                                says):
    status, answer = call(connection, "POST", path, body)
    assert refused(status, answer, 400, "invalid_request_error", says)
    assert model.jobs == []  # nothing reached the decode thread


def test_a_body_that_is_not_json_is_a_400(connection, model):
    status, answer = call(connection, "POST", "/v1/completions", raw=b"{prompt: x}")
    assert refused(status, answer, 400, "invalid_request_error", "Expecting property name")
    assert model.jobs == []


def test_a_job_that_fails_in_the_decode_thread_is_a_500_with_its_error(connection, model):
    model.failure = "llama_decode returned -3"
    status, answer = call(connection, "POST", "/v1/completions", {"prompt": "x"})
    assert refused(status, answer, 500, "server_error", "llama_decode returned -3")


@pytest.mark.parametrize("path", ["/tokenize", "/v1/tokenize", "/tokenize/"])
def test_tokenize_counts_a_prompt_or_a_chat_as_it_would_be_sent(connection, model, path):
    status, counted = call(connection, "POST", path, {"prompt": "abc"})
    assert status == 200
    assert counted == {"count": 3, "max_model_len": model.context, "tokens": [97, 98, 99]}
    messages = [{"role": "user", "content": "x"}]
    _, chat = call(connection, "POST", path, {"messages": messages, "tools": [TOOL]})
    assert chat["count"] == 4 and model.chats == [(messages, True, False, [TOOL])]
    assert model.jobs == []  # counting decodes nothing


@pytest.mark.parametrize(("body", "says"), [
    ({"model": "tiny"}, "give `prompt` (one string) or `messages`"),
    ({"prompt": 3}, "give `prompt` (one string) or `messages`"),
    ("abc", "the body must be a JSON object"),
    ({"messages": [], "tools": [TOOL], "tool_choice": "required"}, "tool_choice"),
])
def test_tokenize_refuses_what_it_cannot_count(connection, body, says):
    status, answer = call(connection, "POST", "/tokenize", body)
    assert refused(status, answer, 400, "invalid_request_error", says)


def test_one_connection_carries_request_after_request(connection):
    """Each answer gives its length, so an HTTP/1.1 client reuses the connection."""
    for _ in range(3):
        assert call(connection, "GET", "/health")[0] == 200
        assert call(connection, "POST", "/v1/completions", {"prompt": "x"})[0] == 200
    assert call(connection, "GET", "/nope")[0] == 404
    assert call(connection, "GET", "/health")[0] == 200


def test_an_error_body_is_openais_shape():
    assert error("no such path: /x", "not_found") == {
        "error": {"message": "no such path: /x", "type": "not_found"}}
