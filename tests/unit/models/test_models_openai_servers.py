"""What the OpenAI client asks a server directly: the fleet's starting server, /tokenize."""

import pytest

from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.openai_servers import counted_prompt_tokens, tokenize_body, worker_index


@pytest.mark.parametrize(("worker", "index"), [("gw0", 0), ("gw12", 12), ("", 0), ("master", 0)])
def test_worker_index(worker: str, index: int):
    assert worker_index(worker) == index


def test_a_completion_is_counted_as_its_prompt():
    assert tokenize_body({"model": "m", "prompt": "def f():", "max_tokens": 5}) == {
        "model": "m", "prompt": "def f():"}


def test_a_chat_is_counted_with_its_generation_prompt_and_tools():
    messages = [{"role": "user", "content": "fix f"}]
    tools = [{"type": "function", "function": {"name": "run_tests"}}]
    assert tokenize_body({"model": "m", "messages": messages, "seed": 1}) == {
        "model": "m", "messages": messages, "add_generation_prompt": True}
    assert tokenize_body({"model": "m", "messages": messages, "tools": tools})["tools"] == tools


def test_a_server_that_cannot_count_names_the_other_budget():
    with pytest.raises(ModelLoadError, match="--humanfix-max-new-tokens"):
        counted_prompt_tokens("http://127.0.0.1:9/v1", {"model": "m", "prompt": "x"}, 1.0)
