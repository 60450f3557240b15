"""The OpenAI-compatible backend against a scripted stdlib server on loopback: retries, errors,
and a server that goes away in the middle of a run."""

from __future__ import annotations

import socket

import pytest
from openai_stub import StubServer

from pytest_humanfix.models import openai_api as openai_backend
from pytest_humanfix.models.base import ModelLoadError, ModelSpecError
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.specs import check_spec, load_model
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]


def model_for(stub: StubServer, **settings) -> OpenAIModel:
    return OpenAIModel("openai:stub-model", "stub-model",
                       Settings(model="openai:stub-model", base_url=stub.base_url, **settings))


def test_request_carries_the_protocol_and_usage_comes_from_the_response(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    with StubServer() as stub:
        model = load_model("openai:stub-model", Settings(
            model="openai:stub-model", base_url=stub.base_url, temperature=0.7,
            max_new_tokens=33, seed=5))
        generation = model.generate(MESSAGES, task=None)
    assert generation.text.startswith("```python")
    assert (generation.prompt_tokens, generation.completion_tokens) == (11, 7)
    (body,) = stub.posts()
    assert body["model"] == "stub-model" and body["messages"] == MESSAGES
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.7, 33, 5)
    assert stub.auth[-1] == "Bearer sk-test-key"


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
        load_model("openai:m", Settings(model="openai:m", base_url=url))
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
