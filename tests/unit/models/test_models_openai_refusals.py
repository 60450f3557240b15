"""A server that takes fewer stop strings than a request has (vLLM under its default
VLLM_MAX_STOP_STRINGS of 4, issue 40 point 4): the client reads the limit from the refusal, sends
what the server takes, cuts the rest itself while streaming, remembers the limit and says so
once; the replies, their tokens and the outcomes are those of a server that takes them all."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from openai_stub import StubServer, too_many_stops

from pytest_humanfix.agent import prompts
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.openai_refusals import fitted_stops, stop_limit
from pytest_humanfix.models.stopping import function_end_stops
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]
TASK = SimpleNamespace(task_id="Python/0", language="python")
TAIL = [" more"] * 30
# Replies a token a piece: one ends at a stop word past the first four ("\nprint"), one where
# the function is left ("\nr", a stop string only of the completion's), one at a stop word
# among the four a limited server is sent ("\n#"), which it then applies itself.
PIECES = {
    "print": ["\n", "    return", " 1", "\n", "print", "(f", "())", *TAIL],
    "left": ["\n", "    return", " 1", "\n", "result", " = 2", "\n", *TAIL],
    "sent": ["\n", "    return", " 1", "\n", "# test", "\n", *TAIL],
}
ASK = {
    "primed": lambda m: m.continue_answer(MESSAGES, "def f():", prompts.STOP_WORDS, TASK),
    "completion": lambda m: m.complete("def f():", prompts.STOP_WORDS, TASK),
    "chat": lambda m: m.generate(MESSAGES, TASK, stop=prompts.STOP_WORDS),
}


def vllm_model(stub: StubServer, prompt: str) -> OpenAIModel:
    return OpenAIModel("openai:stub-model", "stub-model", GenerationConfig.of(Settings(
        model="openai:stub-model", base_url=stub.base_url, engine="vllm", prompt=prompt)))


def test_the_limit_is_read_from_a_refusal_of_the_stop_list_only():
    assert stop_limit(too_many_stops(4, 102), 102) == 4
    assert stop_limit("'stop': at most 32 stop strings are allowed", 40) == 32
    # Not about `stop`, or no smaller number named: an error, never a retry.
    assert stop_limit("max_tokens must be at most 4", 8) is None
    assert stop_limit(too_many_stops(4, 8), 4) is None
    assert stop_limit("'stop' is invalid", 8) is None


def test_the_stops_sent_are_those_that_end_a_reply_first():
    # A stop that holds a shorter one never ends a reply before it: the completion's stop words
    # stand for its function end's "\n" + letter, in BigCode's order.
    completion = [*prompts.STOP_WORDS, *function_end_stops("indent")]
    assert fitted_stops(completion, 4) == ["\nc", "\nd", "\n#", "\n@"]
    assert fitted_stops(prompts.STOP_WORDS, 4) == prompts.STOP_WORDS[:4]
    assert fitted_stops(["\n#", "\n"], 1) == ["\n"]


@pytest.mark.parametrize("reply", sorted(PIECES))
@pytest.mark.parametrize("prompt", sorted(ASK))
def test_a_server_limited_to_four_stops_replies_as_one_that_takes_them_all(prompt, reply):
    ask = ASK[prompt]
    with StubServer(vllm=True, pieces=PIECES[reply]) as full, \
            StubServer(vllm=True, pieces=PIECES[reply], max_stops=4) as limited:
        everything = [ask(vllm_model(full, prompt)) for _ in range(2)]
        model = vllm_model(limited, prompt)
        fitted = [ask(model) for _ in range(2)]
    for one, other in zip(everything, fitted, strict=True):
        assert (one.text, one.finish_reason, one.prompt_tokens, one.completion_tokens) == \
            (other.text, other.finish_reason, other.prompt_tokens, other.completion_tokens)
    # The first request refused, then every one within the limit, the limit remembered.
    refused, *within = limited.posts()
    assert len(refused["stop"]) > 4
    assert [len(body["stop"]) for body in within] == [4, 4]
    assert all(body["stream"] and body["include_stop_str_in_output"] for body in within)
    assert model.server_limits == [
        f"the server at {limited.base_url} takes at most 4 stop strings: it is sent 4 of a "
        "longer list, and the client cuts each reply at the first of them all while "
        "streaming, where it would have stopped"]


def test_a_limited_server_scores_as_an_unlimited_one_and_is_named_once(
        humanfix_pytester, dataset, read_jsonl):
    """The completion prompt, with vLLM's 102 stop strings, through the plugin: the run's
    summary says it once, and the task is scored as against a server that takes them all."""
    task = load_tasks(str(dataset))[0]
    # Python/0's fix, a token a line, then code at column 0 (the function's end).
    pieces = ["\n" + line for line in task.canonical_solution.strip("\n").split("\n")]
    pieces += ["\n", "print", "(1)", *TAIL]
    runs = {}
    for name, limit in (("full", None), ("limited", 4)):
        with StubServer(vllm=True, pieces=pieces, max_stops=limit) as stub:
            result = humanfix_pytester.runpytest(
                "--humanfix-model=openai:stub-model", "--humanfix-prompt=completion",
                "--humanfix-engine=vllm", f"--humanfix-base-url={stub.base_url}",
                "--humanfix-task=Python/0", f"--humanfix-report-dir={name}")
        records = read_jsonl(humanfix_pytester.path / name / "humanfix.jsonl")
        runs[name] = {r["task_id"]: (r["outcome"], [(a["reply"], a["finish_reason"],
                                                      a["completion_tokens"])
                                                     for a in r["attempts"]])
                      for r in records}
        lines = [line for line in result.outlines if line.startswith("server limit:")]
        if limit is None:
            assert lines == []
        else:
            assert lines == [f"server limit: the server at {stub.base_url} takes at most 4 stop "
                             "strings: it is sent 4 of a longer list, and the client cuts each "
                             "reply at the first of them all while streaming, where it would "
                             "have stopped"]
    assert runs["limited"] == runs["full"]
    assert [outcome for outcome, _ in runs["full"].values()] == ["fixed"]
