"""Our llama.cpp engine (`models/engines/llamacpp/`), run in this process on SmolLM2's GGUF file
(the tiny random-weight model answers every prompt greedily with the same newlines): a reply is a function of its prompt whatever else the slots decode, greedy is llama-cpp-python's
own argmax, and the OpenAI fields (finish reasons, stop strings, usage, errors) read as a
client expects."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from serving import engine_http, started_engine

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.engines.llamacpp import cli, decode

SLOTS = 3
CONTEXT = 512
PROMPTS = [f"Fix the bug: def f{n}(x): return x {op} {n}" for n, op in enumerate("+-*/%+-")]
# A conversation whose answer is begun by the client, for the model to continue.
PRIMED = [{"role": "user", "content": "def f(x):\n    return x - 1\nFix bugs in f."},
          {"role": "assistant", "content": "def f(x):"}]
CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}


@pytest.fixture(scope="module")
def engine(smollm2: Path) -> decode.BatchedModel:
    return started_engine(smollm2, CONTEXT, slots=SLOTS)


@pytest.fixture(scope="module")
def engine_url(engine: decode.BatchedModel) -> Iterator[str]:
    yield from engine_http(engine)


def post(url: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def chat(url: str, prompt: str, **fields: Any) -> dict[str, Any]:
    status, body = post(url, "/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": prompt}], "temperature": 0,
        "max_tokens": 24, **fields})
    assert status == 200, body
    return body


def reply(body: dict[str, Any]) -> str:
    return body["choices"][0]["message"]["content"]


def test_a_reply_does_not_depend_on_what_else_the_slots_decode(engine_url):
    alone = [reply(chat(engine_url, p)) for p in PROMPTS]
    assert len(set(alone)) > 1  # the prompts do lead to different replies
    with ThreadPoolExecutor(len(PROMPTS)) as pool:  # more requests than slots: some wait
        together = [reply(body) for body in pool.map(lambda p: chat(engine_url, p), PROMPTS)]
    assert together == alone
    # Sent again right after itself: its slot holds its prompt, and the reply is the same.
    assert [reply(chat(engine_url, PROMPTS[0])) for _ in range(2)] == [alone[0]] * 2


def test_greedy_is_llama_cpp_pythons_argmax_without_a_repeat_penalty(engine_url, smollm2):
    from llama_cpp import Llama

    llm = Llama(model_path=str(smollm2), n_ctx=CONTEXT, n_threads=1, n_threads_batch=1,
                n_batch=64, seed=0, verbose=False)
    messages = [{"role": "user", "content": PROMPTS[2]}]
    theirs = llm.create_chat_completion(messages, temperature=0, max_tokens=24,
                                        repeat_penalty=1.0)
    ours = chat(engine_url, PROMPTS[2])
    assert reply(ours) == theirs["choices"][0]["message"]["content"]
    assert ours["usage"]["prompt_tokens"] == theirs["usage"]["prompt_tokens"]


def test_finish_reasons_stop_strings_and_usage(engine_url):
    body = chat(engine_url, PROMPTS[1], max_tokens=5)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 5
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 5
    assert body["object"] == "chat.completion" and body["model"] == "tiny"

    # A chat's stop strings end it as a completion's do (--humanfix-chat-stop).
    full_chat = reply(chat(engine_url, PROMPTS[1]))
    cut = full_chat[len(full_chat) // 2:][:3]
    assert cut, full_chat
    stopped_chat = chat(engine_url, PROMPTS[1], stop=[cut])
    assert stopped_chat["choices"][0]["finish_reason"] == "stop"
    assert reply(stopped_chat) == full_chat[:full_chat.index(cut)]

    status, full = post(engine_url, "/completions", {"prompt": PROMPTS[3], "temperature": 0,
                                                     "max_tokens": 24})
    assert status == 200 and full["object"] == "text_completion"
    text = full["choices"][0]["text"]
    cut = text[len(text) // 2:][:3]
    assert cut, text
    status, stopped = post(engine_url, "/completions", {"prompt": PROMPTS[3], "temperature": 0,
                                                        "max_tokens": 24, "stop": [cut]})
    assert status == 200 and stopped["choices"][0]["finish_reason"] == "stop"
    assert stopped["choices"][0]["text"] == text[:text.index(cut)]


def test_sampling_follows_the_seed(engine_url):
    def sampled(seed: int) -> str:
        return reply(chat(engine_url, PROMPTS[4], temperature=1.0, seed=seed))

    assert sampled(1) == sampled(1)
    assert len({sampled(seed) for seed in range(2, 6)}) > 1


def test_a_final_assistant_message_is_continued_from_the_text_transformers_lays_out(
        engine, engine_url):
    from transformers.utils.chat_template_utils import render_jinja_template

    text, stop, _ = engine.prompts.chat_text(PRIMED, continue_final=True)
    template = engine.text.metadata["tokenizer.chat_template"]
    (theirs,), _ = render_jinja_template([PRIMED], chat_template=template,
                                         continue_final_message=True, bos_token="",
                                         eos_token="<|im_end|>")
    assert text == theirs
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\ndef f(x):")
    body = chat(engine_url, "", messages=PRIMED, **CONTINUE)
    # The reply is the continuation alone, and it is the reply to that text as a completion:
    # the same tokens in, the same tokens out.
    status, raw = post(engine_url, "/completions", {"prompt": text, "temperature": 0,
                                                    "max_tokens": 24, "stop": stop})
    assert status == 200
    assert reply(body) == raw["choices"][0]["text"] and reply(body).strip()
    assert body["usage"] == raw["usage"]
    assert body["usage"]["prompt_tokens"] == len(engine.prompts.chat_prompt(PRIMED, continue_final=True)[0])
    # Not a new answer: the conversation without the start, answered freely, goes otherwise.
    assert reply(body) != reply(chat(engine_url, "", messages=PRIMED[:1]))


def test_the_openai_backend_sends_a_primed_answer_our_engine_continues(engine_url):
    from pytest_humanfix.models.openai_api import OpenAIModel
    from pytest_humanfix.settings import Settings

    model = OpenAIModel("openai:tiny", "tiny", GenerationConfig.of(Settings(
        model="openai:tiny", base_url=engine_url, prompt="primed", max_new_tokens=24)))
    assert model.prompt == "primed"
    generation = model.continue_answer(PRIMED[:1], PRIMED[1]["content"], [], task=None)
    direct = chat(engine_url, "", messages=PRIMED, **CONTINUE)
    assert generation.text == reply(direct)
    assert generation.prompt_tokens == direct["usage"]["prompt_tokens"]


@pytest.mark.parametrize(("body", "message"), [
    ({"messages": [{"role": "user", "content": "x " * CONTEXT}]}, "raise --n_ctx"),
    ({"messages": PRIMED[:1], "continue_final_message": True}, "final assistant message"),
    ({"messages": PRIMED, "continue_final_message": True, "add_generation_prompt": True},
     "cannot both be true"),
    ({"messages": PRIMED, "continue_final_message": "yes"}, "true or false"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "without `stream`"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n=1"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "not a number"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "at least 1"),
])
def test_a_request_the_engine_cannot_serve_is_a_400_that_says_why(engine_url, body, message):
    status, answer = post(engine_url, "/chat/completions", {"model": "tiny", **body})
    assert status == 400
    assert message in answer["error"]["message"]
    assert reply(chat(engine_url, PROMPTS[0]))  # and the engine serves on


@pytest.mark.parametrize(("arguments", "message"), [
    (["--parallel", "2", "--n_threads", "2"], "one thread"),
    (["--n_threads", "2", "--n_threads_batch", "1"], "must equal --n_threads"),
])
def test_layouts_whose_replies_would_depend_on_the_batch_are_refused(arguments, message,
                                                                     capsys):
    with pytest.raises(SystemExit):
        cli.parse_arguments(["--model", "m.gguf", *arguments])
    assert message in capsys.readouterr().err


# Issue 24: BigCode's end of a completion and its length budget, on the real engine.
REPEATING = ("Fix bugs in add.\n\ndef add(a, b):\n    return a - b\n\n"
             "Fix bugs in add.\n\ndef add(a, b):")


def completion(url: str, prompt: str, **fields: Any) -> dict[str, Any]:
    status, body = post(url, "/completions", {"model": "tiny", "prompt": prompt,
                                              "temperature": 0, "max_tokens": 64, **fields})
    assert status == 200, body
    return body


def test_a_completion_ends_where_it_leaves_the_function(engine_url):
    """bigcode_eval/tasks/humanevalpack.py `check_fn` as a stopping criterion
    (generation.py `EndOfFunctionCriteria`): asked for it, the engine stops at the first
    unindented line, long before the token limit; the reply keeps the start of that line, which
    the graded code cuts."""
    from pytest_humanfix.models.stopping import function_end

    on = completion(engine_url, REPEATING)
    text = on["choices"][0]["text"]
    end = function_end(text, "indent")
    assert end is not None, text  # SmolLM2 repeats the prompt: it leaves the function
    stopped = completion(engine_url, REPEATING, humanfix_function_end="indent")
    kept = stopped["choices"][0]["text"]
    assert text.startswith(kept) and len(kept) > end and function_end(kept, "indent") == end
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert stopped["usage"]["completion_tokens"] < on["usage"]["completion_tokens"]


def test_tokenize_counts_the_prompt_as_a_request_sends_it(engine_url):
    """vLLM's POST /tokenize, which --humanfix-max-length asks a server for."""
    root = engine_url.removesuffix("/v1")
    status, counted = post(root, "/tokenize", {"model": "tiny", "prompt": REPEATING})
    assert status == 200
    assert counted["count"] == completion(engine_url, REPEATING)["usage"]["prompt_tokens"]
    messages = [{"role": "user", "content": PROMPTS[2]}]
    status, counted = post(root, "/tokenize", {"model": "tiny", "messages": messages})
    assert counted["count"] == chat(engine_url, PROMPTS[2])["usage"]["prompt_tokens"]
    assert post(root, "/tokenize", {"model": "tiny"})[0] == 400


def test_max_length_leaves_each_prompt_its_own_room(engine_url, dataset):
    """main.py `--max_length_generation`: prompt and reply together. A prompt of the budget or
    more gets the empty reply BigCode's left truncation leaves (utils.py `complete_code`)."""
    from pytest_humanfix.dataset import load_tasks
    from pytest_humanfix.models.openai_api import OpenAIModel
    from pytest_humanfix.settings import Settings

    task = load_tasks(str(dataset))[0]
    prompt_tokens = completion(engine_url, REPEATING)["usage"]["prompt_tokens"]

    def complete(max_length: int):
        model = OpenAIModel("openai:tiny", "tiny", GenerationConfig.of(Settings(
            model="openai:tiny", base_url=engine_url, engine="llamacpp", prompt="completion",
            max_length=max_length)))
        return model.complete(REPEATING, [], task)

    roomy = complete(prompt_tokens + 3)
    assert (roomy.prompt_tokens, roomy.completion_tokens) == (prompt_tokens, 3)
    assert roomy.finish_reason == "length"
    for budget in (prompt_tokens, prompt_tokens - 1):
        empty = complete(budget)
        assert (empty.text, empty.completion_tokens, empty.finish_reason) == ("", 0, "length")
        assert empty.prompt_tokens == prompt_tokens


def test_a_function_end_rule_on_a_chat_is_refused(engine_url):
    status, answer = post(engine_url, "/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": "x"}],
        "humanfix_function_end": "indent"})
    assert status == 400 and "for /v1/completions only" in answer["error"]["message"]
