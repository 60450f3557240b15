"""Tool calls through our llama.cpp engine and the OpenAI backend: `tools` laid out by the GGUF's
own chat template (the tiny model carrying Qwen2.5's), a conversation holding calls and their
results, the calls in a reply parsed into OpenAI's `tool_calls`, and the refusals that name the
fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_stub import StubServer
from serving import engine_http, started_engine
from test_llamacpp_server import post

from pytest_humanfix.agent import prompts
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.engines.llamacpp import decode, jobs
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.openai_refusals import TOOLS_REFUSED
from pytest_humanfix.settings import Settings

TOOLS = [prompts.run_tests_tool("tests")]
CODE = "def f(x):\n    return x + 1"
CALLED = [
    {"role": "user", "content": "def f(x):\n    return x - 1\nFix bugs in f."},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "run_tests", "arguments": json.dumps({"code": CODE})}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "assert 2 == 3"},
]


@pytest.fixture(scope="module")
def tools_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinymodel import QWEN25_TEMPLATE, build_tiny_model, write_gguf

    folder = build_tiny_model(tmp_path_factory.mktemp("tiny-tools"), template=QWEN25_TEMPLATE)
    return write_gguf(folder, tmp_path_factory.mktemp("tiny-tools-gguf") / "tiny.F32.gguf")


@pytest.fixture(scope="module")
def engine(tools_gguf: Path) -> decode.BatchedModel:
    return started_engine(tools_gguf, 1024, slots=1)


@pytest.fixture(scope="module")
def engine_url(engine: decode.BatchedModel) -> Iterator[str]:
    yield from engine_http(engine)


def test_the_template_lays_out_the_tools_the_calls_and_their_results(engine):
    text, _, _ = engine.prompts.chat_text(CALLED, tools=TOOLS)
    # The declaration, where Qwen2.5's template puts it, with the form of a call.
    assert "# Tools\n" in text and json.dumps(TOOLS[0], ensure_ascii=False) in text
    assert "<tool_call>\n{\"name\": <function-name>" in text
    # The call as the object it writes (not its arguments' JSON text quoted once more) ...
    call = json.dumps({"code": CODE}, ensure_ascii=False)
    assert '<tool_call>\n{"name": "run_tests", "arguments": ' + call + "}\n</tool_call>" in text
    # ... then its result, and the answer's start.
    assert "<|im_start|>user\n<tool_response>\nassert 2 == 3\n</tool_response><|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    # Without tools, no tools section: the same template lays out a plain chat.
    plain, _, _ = engine.prompts.chat_text(CALLED[:1])
    assert "# Tools" not in plain


def test_a_call_in_the_reply_comes_back_as_openais_tool_calls(engine, engine_url, monkeypatch):
    said = ('Testing.\n<tool_call>\n{"name": "run_tests", "arguments": {"code": "'
            + CODE.replace("\n", "\\n") + '"}}\n</tool_call>')
    monkeypatch.setattr(engine, "reply_text", lambda job: said)
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": CALLED, "tools": TOOLS, "temperature": 0, "max_tokens": 4})
    assert status == 200, body
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "Testing."
    [call] = message["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "run_tests"
    assert json.loads(call["function"]["arguments"]) == {"code": CODE}
    # The client reads it as the generation's call.
    model = OpenAIModel("openai:tiny", "tiny", GenerationConfig.of(Settings(model="openai:tiny", base_url=engine_url,
                                                        max_new_tokens=4)))
    generation = model.generate(CALLED, task=None, tools=TOOLS)
    assert generation.text == "Testing." and generation.finish_reason == "stop"
    assert [(c.name, c.argument("code")) for c in generation.tool_calls] == [("run_tests", CODE)]
    # Not offered tools, the same text is a reply's text.
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": CALLED[:1], "temperature": 0, "max_tokens": 4})
    assert body["choices"][0]["message"] == {"role": "assistant", "content": said}


def test_a_malformed_call_is_the_replys_text(engine, engine_url, monkeypatch):
    said = '<tool_call>\n{"name": "run_tests", "arguments": {"code": \n</tool_call>'
    monkeypatch.setattr(engine, "reply_text", lambda job: said)
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": CALLED, "tools": TOOLS, "temperature": 0, "max_tokens": 4})
    assert status == 200
    assert body["choices"][0]["message"] == {"role": "assistant", "content": said}
    assert body["choices"][0]["finish_reason"] in ("stop", "length")


def test_the_real_reply_to_a_tools_request_is_served(engine_url):
    """No stand-in: the tiny model answers a conversation with calls and results in it."""
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": CALLED, "tools": TOOLS, "temperature": 0, "max_tokens": 8})
    assert status == 200, body
    assert body["usage"]["completion_tokens"] > 0
    # The tools are part of the prompt, and /tokenize counts them as the request sends them.
    status, counted = post(engine_url.removesuffix("/v1"), "/tokenize",
                           {"messages": CALLED, "tools": TOOLS})
    assert counted["count"] == body["usage"]["prompt_tokens"]
    status, plain = post(engine_url.removesuffix("/v1"), "/tokenize", {"messages": CALLED})
    assert plain["count"] < counted["count"]


@pytest.mark.parametrize(("fields", "message"), [
    ({"tools": TOOLS, "tool_choice": "required"}, "only `tool_choice` auto"),
    ({"tools": [{"type": "function"}]}, "`tools` is a list of"),
    ({"tools": "run_tests"}, "`tools` is a list of"),
])
def test_tools_the_engine_cannot_serve_are_a_400_that_says_why(engine_url, fields, message):
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": CALLED[:1], "max_tokens": 4, **fields})
    assert status == 400 and message in body["error"]["message"]


def test_arguments_that_are_not_json_are_a_400(engine_url):
    broken = [CALLED[0], {**CALLED[1], "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "run_tests", "arguments": "{not json"}}]}]
    status, body = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": broken, "tools": TOOLS, "max_tokens": 4})
    assert status == 400 and "not JSON text" in body["error"]["message"]


def test_a_template_without_tools_refuses_them(tiny_gguf):
    model = decode.BatchedModel(str(tiny_gguf), 256, threads=1, slots=1, batch=64)
    with pytest.raises(jobs.RequestError, match="no place for tools"):
        model.prompts.chat_text(CALLED[:1], tools=TOOLS)


def test_a_server_that_refuses_tools_is_an_error_that_names_the_fix():
    # vLLM's words when it was started without a tool parser.
    refusal = (400, '"auto" tool choice requires --enable-auto-tool-choice and '
                    '--tool-call-parser to be set')
    with StubServer(script=[refusal]) as stub:
        model = OpenAIModel("openai:m", "m", GenerationConfig.of(Settings(model="openai:m", base_url=stub.base_url)))
        with pytest.raises(ModelLoadError) as raised:
            model.generate(CALLED[:1], task=None, tools=TOOLS)
    assert TOOLS_REFUSED.advice in str(raised.value) and "answered 400" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert stub.posts()[-1]["tools"] == TOOLS
