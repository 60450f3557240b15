"""A server that ignores `stop` (transformers serve, issue 33 point 3): its reply is streamed and
the stream closed at the first stop, a stop string split across chunks or a completion's
function end, so the server stops generating there; the tokens counted are the ones it
generated. Engines that honour `stop` are asked as before, and every reply is cut before its
first stop string whatever the server sent."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from openai_stub import StubServer

from pytest_humanfix.models import openai_api
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]
TASK = SimpleNamespace(task_id="Python/0", language="python")
STOP = ["\n```"]
# A chat reply, a token a piece, whose stop string "\n```" straddles three pieces, then a long
# tail the server would have generated had it ignored the close.
CHAT_PIECES = ["```python\n", "def f():\n", "    return 1\n", "`", "``", "\n\nThis", *[" more"] * 200]
TAIL = [" more"] * 200


def model_for(stub: StubServer, tiny_model, engine: str = "transformers",
              **settings) -> OpenAIModel:
    """The tiny model's folder names the served model, as --humanfix-serve names a folder: the
    client counts a cut reply's prompt with its tokenizer."""
    name = str(tiny_model)
    return OpenAIModel(f"openai:{name}", name, Settings(
        model=f"openai:{name}", base_url=stub.base_url, engine=engine, **settings))


def tokenizer_count(tiny_model, messages=None, prompt=None) -> int:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    if prompt is not None:
        return len(tokenizer(prompt)["input_ids"])
    return len(tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                             tokenize=True, return_dict=True)["input_ids"])


def test_a_stop_string_split_across_chunks_closes_the_stream_there(tiny_model):
    with StubServer(pieces=CHAT_PIECES, finish_reason="length") as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)
    assert generation.text == "```python\ndef f():\n    return 1"
    assert generation.finish_reason == "stop" and generation.engine == "transformers"
    # The pieces up to the one that completed the stop, a token each.
    assert generation.completion_tokens == 5
    assert generation.prompt_tokens == tokenizer_count(tiny_model, MESSAGES)
    (body,) = stub.posts()
    assert body["stream"] is True and body["stop"] == STOP
    # The server saw the close and sent nothing much past the stop.
    assert stub.disconnected == 1 and stub.sent[0] <= 5 + 2


def test_a_completion_stream_closes_where_the_function_ends(tiny_model):
    pieces = ["\n", "    return", " 1", "\n", "x", " = f()", "\n", *TAIL]
    prompt = "def f():"
    with StubServer(pieces=pieces) as stub:
        generation = model_for(stub, tiny_model, prompt="completion").complete(
            prompt, ["\ndef", "\nif"], TASK)
    # The line that left the function keeps what was streamed of it, as our llama.cpp engine
    # keeps it, for the graded code to cut as BigCode does.
    assert generation.text == "\n    return 1\nx"
    assert (generation.finish_reason, generation.completion_tokens) == ("stop", 5)
    assert generation.prompt_tokens == tokenizer_count(tiny_model, prompt=prompt)
    assert stub.requests[-1][1] == "/v1/completions" and stub.sent[0] <= 5 + 2


def test_a_stream_that_ends_by_itself_counts_the_servers_usage(tiny_model):
    pieces = ["```python\n", "x = 1", "\n"]
    with StubServer(pieces=pieces, finish_reason="length") as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)
    assert generation.text == "```python\nx = 1\n" and generation.finish_reason == "length"
    assert (generation.prompt_tokens, generation.completion_tokens) == (11, 3)
    assert stub.disconnected == 0


def test_a_stream_without_usage_is_counted_by_the_client(tiny_model):
    with StubServer(pieces=["x", " = ", "1"], stream_usage=False) as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)
    assert (generation.text, generation.finish_reason) == ("x = 1", "stop")
    assert generation.completion_tokens == 3
    assert generation.prompt_tokens == tokenizer_count(tiny_model, MESSAGES)


@pytest.mark.parametrize("engine", ["llamacpp", "vllm", "openai"])
def test_engines_that_honour_stop_are_not_streamed_and_are_cut_all_the_same(tiny_model,
                                                                            engine):
    # A reply past its stop string, as a server ignoring `stop` would send it in one piece.
    with StubServer(reply="```python\nx = 1\n```\nmore", finish_reason="length") as stub:
        generation = model_for(stub, tiny_model, engine=engine).generate(MESSAGES, TASK,
                                                                         stop=STOP)
    (body,) = stub.posts()
    assert "stream" not in body
    assert (generation.text, generation.finish_reason) == ("```python\nx = 1", "stop")
    # The tokens the server says it generated, every one of them paid for.
    assert (generation.prompt_tokens, generation.completion_tokens) == (11, 7)


def test_a_reply_without_stop_strings_is_not_streamed(tiny_model):
    with StubServer(finish_reason="length") as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK)
    assert "stream" not in stub.posts()[0] and generation.finish_reason == "length"


def test_server_errors_before_the_stream_are_retried(tiny_model):
    with StubServer(script=[503, 500], pieces=["x", "\n```", *TAIL]) as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)
    assert generation.text == "x" and len(stub.posts()) == 3


def test_a_stream_broken_off_is_a_server_failure(tiny_model):
    # The server goes away mid-reply: the connection ends with no finish reason.
    with StubServer(pieces=["x", None]) as stub:
        with pytest.raises(ModelLoadError, match="broke off a streamed reply"):
            model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)


def test_a_stream_slower_than_the_request_timeout_fails_naming_the_option(tiny_model):
    with StubServer(pieces=["x"] * 50, piece_delay=0.1) as stub:
        with pytest.raises(ModelLoadError, match="--humanfix-request-timeout"):
            model_for(stub, tiny_model, request_timeout=0.5).generate(MESSAGES, TASK,
                                                                      stop=STOP)
    assert stub.sent[0] < 50


def test_only_engines_known_to_ignore_stop_are_streamed():
    assert openai_api.STOP_IGNORED_BY == {"transformers"}
