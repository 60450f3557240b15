"""The OpenAI-compatible backend against a scripted stdlib server on loopback: retries, errors,
and a server that goes away in the middle of a run."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
from openai_stub import StubServer

from pytest_humanfix.agent import prompts
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models import openai_api as openai_backend
from pytest_humanfix.models.base import ModelLoadError, ModelSpecError, sample_seed
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.openai_refusals import VLLM_STOP_STRINGS
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.models.specs import check_spec, load_model
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]

# What a backend reads of a task: its id, which seeds a sampled reply, and its language, whose
# rule ends a completion.
TASK = SimpleNamespace(task_id="Python/0", language="python")


def model_for(stub: StubServer, **settings) -> OpenAIModel:
    return OpenAIModel("openai:stub-model", "stub-model",
                       GenerationConfig.of(Settings(model="openai:stub-model", base_url=stub.base_url, **settings)))


def test_request_carries_the_protocol_and_usage_comes_from_the_response(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    with StubServer() as stub:
        model = load_model("openai:stub-model", GenerationConfig.of(Settings(
            model="openai:stub-model", base_url=stub.base_url, temperature=0.7,
            max_new_tokens=33, seed=5)))
        generation = model.generate(MESSAGES, task=TASK)
        model.generate(MESSAGES, task=TASK, temperature=0)
        model.generate(MESSAGES, task=TASK, temperature=1.0)
    assert generation.text.startswith("```python")
    assert (generation.prompt_tokens, generation.completion_tokens) == (11, 7)
    body, greedy, hotter = stub.posts()
    assert body["model"] == "stub-model" and body["messages"] == MESSAGES
    # A sampled reply draws with a seed of its own per task and reply; a greedy one keeps the
    # run's seed; the agent's per-request temperature wins over the run's.
    assert (body["temperature"], body["max_tokens"], body["seed"]) == \
        (0.7, 33, sample_seed(5, "Python/0", 0))
    assert (greedy["temperature"], greedy["seed"]) == (0, 5)
    assert (hotter["temperature"], hotter["seed"]) == (1.0, sample_seed(5, "Python/0", 1))
    assert stub.auth[-1] == "Bearer sk-test-key"


def test_a_chat_reply_sends_its_stop_strings_only_when_it_has_some():
    with StubServer() as stub:
        model = model_for(stub)
        model.generate(MESSAGES, task=TASK, stop=["\n```\n"])
        model.generate(MESSAGES, task=TASK)
    stopped, free = stub.posts()
    assert stopped["stop"] == ["\n```\n"] and "stop" not in free


def test_a_primed_answer_asks_the_server_to_continue_its_start_as_vllm_names_it():
    continuation = "\n    return 1\n"
    with StubServer(reply=continuation) as stub:
        model = model_for(stub, prompt="primed")
        assert model.prompt == "primed"
        generation = model.continue_answer(MESSAGES, "def f():", ["\ndef", "\nif"], task=TASK)
    assert generation.text == continuation and generation.completion_tokens == 7
    (body,) = stub.posts()
    assert stub.requests[-1][1] == "/v1/chat/completions"
    assert body["messages"] == [*MESSAGES, {"role": "assistant", "content": "def f():"}]
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert body["stop"] == ["\ndef", "\nif"] and body["temperature"] == 0


def test_a_server_that_refuses_to_continue_an_answer_names_the_chat_prompt():
    refusal = (400, "Extra inputs are not permitted: continue_final_message")
    with StubServer(script=[refusal]) as stub:
        with pytest.raises(ModelLoadError, match="answered 400.*continue_final_message.*"
                                                 "use --humanfix-prompt chat"):
            model_for(stub, prompt="primed").continue_answer(MESSAGES, "def f():", [], task=TASK)
    assert len(stub.posts()) == 1


# A refusal of the stop list that names no limit to work within (one that does is met by
# sending fewer: test_models_openai_refusals.py).
STOPS_REFUSED_UNNAMED = (400, "1 validation error:\n  {'type': 'too_long', 'loc': 'body.stop', "
                              "'msg': 'too many stop strings'}")


def test_too_many_stop_strings_name_vllms_variable_and_blame_nothing_else():
    for prompt, ask in (("primed", lambda m: m.continue_answer(MESSAGES, "def f():", ["a"] * 8,
                                                               task=TASK)),
                        ("completion", lambda m: m.complete("def f():", ["a"] * 8, task=TASK)),
                        ("chat", lambda m: m.generate(MESSAGES, task=TASK, stop=["a"] * 8))):
        with StubServer(script=[STOPS_REFUSED_UNNAMED]) as stub:
            with pytest.raises(ModelLoadError) as refused:
                ask(model_for(stub, prompt=prompt))
        message = str(refused.value)
        assert "too many stop strings" in message
        assert f"VLLM_MAX_STOP_STRINGS={VLLM_STOP_STRINGS}" in message
        assert "continue a final assistant message" not in message
        assert "tool calls" not in message


def test_a_refusal_of_something_else_blames_neither_priming_nor_tools():
    for ask in (lambda m: m.continue_answer(MESSAGES, "def f():", [], task=TASK),
                lambda m: m.generate(MESSAGES, task=TASK, tools=[{"type": "function"}])):
        with StubServer(script=[(400, "max_tokens must be at least 1")]) as stub:
            with pytest.raises(ModelLoadError) as refused:
                ask(model_for(stub))
        assert str(refused.value).endswith("max_tokens must be at least 1")


def test_rate_limit_and_server_errors_are_retried_until_an_answer():
    with StubServer(script=[429, 503, 500]) as stub:
        generation = model_for(stub).generate(MESSAGES, task=None)
    assert generation.completion_tokens == 7
    assert len(stub.posts()) == 4


def test_persistent_server_errors_end_in_a_load_error_after_bounded_retries():
    with StubServer(script=[503] * 10) as stub:
        with pytest.raises(ModelLoadError, match="answered 503"):
            model_for(stub).generate(MESSAGES, task=None)
    assert len(stub.posts()) == openai_backend.RETRIES + 1


def test_client_errors_are_not_retried():
    with StubServer(script=[400]) as stub:
        with pytest.raises(ModelLoadError, match="answered 400 for model 'stub-model'"):
            model_for(stub).generate(MESSAGES, task=None)
    assert len(stub.posts()) == 1


def test_a_slow_server_times_out_with_a_message_naming_the_option():
    with StubServer(script=[2.0] * (openai_backend.RETRIES + 1)) as stub:
        with pytest.raises(ModelLoadError, match="--humanfix-request-timeout"):
            model_for(stub, request_timeout=0.2).generate(MESSAGES, task=None)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_fails_at_load_with_the_fix():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ModelLoadError, match="cannot reach .* --humanfix-base-url") as info:
        load_model("openai:m", GenerationConfig.of(Settings(model="openai:m", base_url=url)))
    assert url in str(info.value)


def test_an_empty_openai_spec_is_a_usage_error():
    with pytest.raises(ModelSpecError, match="openai: needs the served model's name"):
        check_spec("openai:", Settings())
    # No server is contacted to check a spec: nothing listens on this port.
    check_spec("openai:anything", Settings(base_url="http://127.0.0.1:9/v1"))


def test_a_server_going_away_mid_run_gives_errors_not_unfixed(humanfix_pytester, read_records):
    with StubServer(die_after=1) as stub:
        result = humanfix_pytester.runpytest(
            "--humanfix-model", "openai:stub-model",
            "--humanfix-base-url", stub.base_url, "--humanfix-max", "5", "-n", "2")
    records = read_records()
    answered = stub.completions
    assert answered >= 1
    assert len(records) == 5
    errors = [r for r in records if r["outcome"] == "error"]
    scored = [r for r in records if r["outcome"] != "error"]
    # Exactly the tasks the server answered are scored; every other one is a harness error.
    assert len(scored) == answered and all(r["tokens"]["completion"] == 7 for r in scored)
    assert len(errors) == 5 - answered
    assert all("cannot reach the OpenAI-compatible server" in r["error"] for r in errors)
    result.assert_outcomes(failed=answered, errors=5 - answered)
    result.stdout.fnmatch_lines([f"fixed 0, not fixed {answered}, errors {5 - answered} *"])


def test_a_completion_goes_to_v1_completions_with_the_stop_words():
    with StubServer(reply="\n    return 1\n") as stub:
        model = model_for(stub, prompt="completion", temperature=0.2, max_new_tokens=40)
        assert model.prompt == "completion"
        generation = model.complete("Fix bugs in f.\n\ndef f():", prompts.STOP_WORDS, task=TASK)
    assert generation.text == "\n    return 1\n"
    assert (generation.finish_reason, generation.engine) == ("stop", "openai")
    ((method, path, body),) = [r for r in stub.requests if r[0] == "POST"]
    assert path == "/v1/completions"
    assert body["prompt"] == "Fix bugs in f.\n\ndef f():" and body["stop"] == prompts.STOP_WORDS
    assert (body["temperature"], body["max_tokens"]) == (0.2, 40)


def test_the_servers_finish_reason_and_the_engine_label_are_kept():
    with StubServer(finish_reason="length") as stub:
        assert model_for(stub).prompt == "chat"
        generation = model_for(stub, engine="llamacpp").generate(MESSAGES, task=None)
    assert (generation.finish_reason, generation.engine) == ("length", "llamacpp")


def test_a_completion_run_through_the_plugin_follows_bigcode(humanfix_pytester, dataset,
                                                             read_records):
    """A base model served over /v1/completions: BigCode's prompt goes out, and the
    continuation, cut as BigCode cuts it, is put after the prompt base."""
    task = load_tasks(str(dataset))[0]
    # What a server that ignored the stop words would send: the fix, then more.
    reply = "\n" + task.canonical_solution + "\nprint(has_close_elements([1.0], 0.5))\n"
    with StubServer(reply=reply, finish_reason="length") as stub:
        result = humanfix_pytester.runpytest(
            "--humanfix-model=openai:base", "--humanfix-prompt=completion",
            f"--humanfix-base-url={stub.base_url}", "--humanfix-task=Python/0")
    result.assert_outcomes(passed=1)
    (body,) = stub.posts()
    assert body["prompt"] == (prompts.first_prompt(task, "tests") + "\n\n"
                              + task.declaration).strip()
    (record,) = read_records()
    assert record["protocol"]["prompt"] == "completion"
    (attempt,) = record["attempts"]
    # The client cuts the reply before the stop word the server ignored, as a server
    # honouring it would have ended it.
    assert (attempt["prompt"], attempt["finish_reason"], attempt["engine"]) \
        == ("completion", "stop", "openai")
    assert attempt["reply"] == reply[:reply.index("\nprint")]
    # The body after the declaration's stripped newline, stripped as a reply that a server
    # honouring the stop words ended there is.
    assert attempt["code"] == task.declaration.rstrip() + "\n" + task.canonical_solution.rstrip()


@pytest.mark.parametrize("engine", ["llamacpp", "vllm"])
def test_a_shared_engine_labels_the_replies_it_serves(engine):
    # An Endpoint (models/engines/launch.py) always names its engine.
    with StubServer() as stub:
        runner = Runner(Settings(model="smollm2"), RunState("run-1"), endpoint={
            "base_url": stub.base_url, "model": "served-name", "engine": engine})
        generation = runner.model().generate(MESSAGES, task=None)
    assert generation.engine == engine
    assert stub.posts()[0]["model"] == "served-name"
