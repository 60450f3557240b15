"""A server that ignores `stop` (transformers serve, issue 33 point 3): its reply is streamed and
the stream closed at the first stop, a stop string split across chunks or a completion's
function end, so the server stops generating there; the tokens counted are the ones it
generated. Engines that honour `stop` are asked as before, and every reply is cut before its
first stop string whatever the server sent."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest
from openai_stub import StubServer

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models import openai_api
from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.stopping import stop_point
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]
TASK = SimpleNamespace(task_id="Python/0", language="python")
STOP = ["\n```"]
# What a server would have generated past the stop had it ignored the client's close.
TAIL = [" more"] * 200
# A chat reply, a token a piece, whose stop string "\n```" straddles three pieces.
CHAT_PIECES = ["```python\n", "def f():\n", "    return 1\n", "`", "``", "\n\nThis", *TAIL]


def model_for(stub: StubServer, tiny_model, engine: str = "transformers",
              **settings) -> OpenAIModel:
    """The tiny model's folder names the served model, as --humanfix-serve names a folder: the
    client counts a cut reply's prompt with its tokenizer."""
    name = str(tiny_model)
    return OpenAIModel(f"openai:{name}", name, GenerationConfig.of(Settings(
        model=f"openai:{name}", base_url=stub.base_url, engine=engine, **settings)))


def tokenizer_count(tiny_model, messages=None, prompt=None, streamed=None) -> int:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    if streamed is not None:  # a piece is at least a token
        text = "".join(streamed)
        return max(len(streamed), len(tokenizer(text, add_special_tokens=False)["input_ids"]))
    if prompt is not None:
        return len(tokenizer(prompt)["input_ids"])
    return len(tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                             tokenize=True, return_dict=True)["input_ids"])


def test_a_stop_string_split_across_chunks_closes_the_stream_there(tiny_model):
    with StubServer(pieces=CHAT_PIECES, finish_reason="length") as stub:
        generation = model_for(stub, tiny_model).generate(MESSAGES, TASK, stop=STOP)
    assert generation.text == "```python\ndef f():\n    return 1"
    assert generation.finish_reason == "stop" and generation.engine == "transformers"
    # The text streamed up to the piece that completed the stop, as the tokenizer counts it.
    assert generation.completion_tokens == tokenizer_count(tiny_model, streamed=CHAT_PIECES[:5])
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
    assert generation.finish_reason == "stop"
    assert generation.completion_tokens == tokenizer_count(tiny_model, streamed=pieces[:5])
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
    assert generation.completion_tokens == tokenizer_count(tiny_model,
                                                           streamed=["x", " = ", "1"])
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
        # The stub counts a stream once its writes fail after the client left: under load that
        # can come after the client's error, so wait for it rather than read an empty count.
        deadline = time.monotonic() + 10
        while not stub.sent and time.monotonic() < deadline:
            time.sleep(0.05)
    assert stub.sent and stub.sent[0] < 50


def test_only_engines_known_to_ignore_stop_are_streamed():
    assert openai_api.STOP_IGNORED_BY == {"transformers"}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and its finished children, from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def cpu_until_quiet(pid: int, since: float, window: float = 1.0, within: float = 30) -> float:
    """CPU seconds the process has spent since `since` (a `cpu_seconds` reading) by the end of
    the first `window` in which it computed for under 5% of it; infinite if none came `within`
    seconds. An engine notices a closed stream some tokens late, and later still on a loaded
    machine, so what it spends after a close is read once it has gone quiet, not at a fixed
    time."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(window)
        after = cpu_seconds(pid)
        if after - before < 0.05 * window:
            return after - since
    return float("inf")


@pytest.mark.slow
def test_transformers_serve_stops_at_the_stop_and_counts_what_it_generated(tmp_path):
    """The real fallback on smollm2: no reply runs past its stop, the tokens counted are fewer
    than the limit, and the engine stops computing once the stream is closed."""
    engine = launch.launch(Settings(model="smollm2", engine="transformers"),
                          tmp_path / "server.log")
    try:
        # Far above the reply's length, so that running on to it would cost many times what
        # the reply cost.
        limit = 256
        model = OpenAIModel(f"openai:{engine.model.name}", engine.model.name, GenerationConfig.of(Settings(
            model=f"openai:{engine.model.name}", base_url=engine.base_url,
            engine="transformers", max_new_tokens=limit)))
        before = cpu_seconds(engine.pid)
        chat = model.generate([{"role": "user", "content": "Write a Python function that adds "
                                "two numbers, in a code block."}], TASK, stop=STOP)
        closed_at = cpu_seconds(engine.pid)
        # What the reply cost a token, its prompt included, so on any machine and under any
        # load: running on to the limit would spend that for each token left.
        per_token = (closed_at - before) / chat.completion_tokens
        after_close = cpu_until_quiet(engine.pid, closed_at)
        assert after_close < 0.25 * per_token * (limit - chat.completion_tokens)
        completion = model.complete('def add(a, b):\n    """Return a + b."""\n',
                                    ["\ndef", "\nif", "\nprint"], TASK)
    finally:
        engine.stop()
    assert chat.text.startswith("```") and "\n```" not in chat.text
    for generation in (chat, completion):
        assert generation.finish_reason == "stop" and generation.engine == "transformers"
        assert 0 < generation.completion_tokens < limit and generation.prompt_tokens > 0
    assert stop_point(completion.text, ["\ndef", "\nif", "\nprint"], "indent") is not None


def test_a_cut_reply_whose_tokenizer_cannot_be_loaded_is_a_load_error(tmp_path):
    with StubServer(pieces=["x", "\n```", *TAIL]) as stub:
        with pytest.raises(ModelLoadError, match="served model's tokenizer"):
            model_for(stub, tmp_path / "no-model").generate(MESSAGES, TASK, stop=STOP)
