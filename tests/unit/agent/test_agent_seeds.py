"""One seed rule in every backend: the same options draw the same samples in process (the
transformers backend on the tiny model) and served (the OpenAI client, against a server that
runs the same tiny model with the seed each request carries, as vLLM and our llama.cpp engine
do), through the agents whose rounds mix greedy and sampled replies."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_doubles import CountingSandbox
from openai_stub import StubServer

from pytest_humanfix.agent import graph
from pytest_humanfix.agent.config import RepairConfig
from pytest_humanfix.dataset import Task
from pytest_humanfix.models.base import ReplySeeds, sample_seed
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.hf import TransformersModel
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.settings import Settings


class Seeds:
    """The seeds a model drew its replies with, in order."""

    def __init__(self, seeds: ReplySeeds) -> None:
        self.seeds = seeds
        self.drawn: list[int] = []

    def next(self, task: Task, temperature: float) -> int:
        self.drawn.append(self.seeds.next(task, temperature))
        return self.drawn[-1]


class RequestSeed:
    """An engine's seed: the one the request carries."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def next(self, task: Task, temperature: float) -> int:
        return self.seed


class TinyServer(StubServer):
    """An OpenAI-compatible server of the tiny model: each chat request is answered by
    transformers at the request's temperature, stop strings and seed."""

    def __init__(self, model: TransformersModel, task: Task) -> None:
        super().__init__()
        self.model, self.task = model, task

    def answer(self, path: str, request: dict) -> dict:
        self.model.seeds = RequestSeed(request["seed"])  # type: ignore[assignment]
        reply = self.model.generate(request["messages"], self.task,
                                    temperature=request["temperature"], stop=request.get("stop"))
        return {"id": "tiny", "object": "chat.completion", "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                             "message": {"role": "assistant", "content": reply.text}}],
                "usage": {"prompt_tokens": reply.prompt_tokens,
                          "completion_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens}}


# A task of a few lines: the tiny model's tokenizer makes a long prompt of a real one, which
# costs seconds a reply on a CPU.
TASK = Task("Python/0", "add", "operator misuse", prompt='def add(a, b):\n    """a + b"""\n',
            declaration="def add(a, b):\n", buggy_solution="    return a - b\n",
            canonical_solution="    return a + b\n",
            test="def check(candidate):\n    assert candidate(1, 2) == 3\n\ncheck(add)\n")


def tiny(tiny_model: Path, **options: object) -> TransformersModel:
    return TransformersModel(str(tiny_model), str(tiny_model), GenerationConfig.of(
        Settings(model=str(tiny_model), **options)))  # type: ignore[arg-type]


@pytest.mark.parametrize(("agent", "temperature"), [
    ("rewrite", 0.0), ("resample", 0.0), ("rewrite", 0.7)])
def test_the_same_options_draw_the_same_samples_in_process_and_served(tiny_model, agent,
                                                                       temperature):
    options = {"seed": 7, "temperature": temperature, "max_new_tokens": 12}
    rounds = RepairConfig.of(Settings(agent=agent, iters=3, temperature=temperature,
                                      round_temperature=(0.8, 1.1)))
    in_process = tiny(tiny_model, **options)
    in_process.seeds = drawn = Seeds(in_process.seeds)  # type: ignore[assignment]
    own = graph.repair(TASK, in_process, CountingSandbox(), rounds, langgraph=False)
    with TinyServer(tiny(tiny_model, **options), TASK) as server:
        client = OpenAIModel("openai:tiny", "tiny", GenerationConfig.of(Settings(
            model="openai:tiny", base_url=server.base_url, **options)))  # type: ignore[arg-type]
        served = graph.repair(TASK, client, CountingSandbox(), rounds, langgraph=False)
        sent = server.posts()
    # A greedy reply takes the run's seed; the n-th sampled reply of the task its n-th seed.
    greedy = 2 if agent == "rewrite" and temperature == 0 else 1 if temperature == 0 else 0
    assert drawn.drawn == [7] * greedy + [sample_seed(7, TASK.task_id, n) for n in range(4 - greedy)]
    assert [post["seed"] for post in sent] == drawn.drawn
    assert [post["temperature"] for post in sent] == [a.temperature for a in own.attempts]
    # The same requests, so the same replies: the samples are the same draws on both paths.
    assert [a.reply for a in served.attempts] == [a.reply for a in own.attempts]
    assert len({a.reply for a in own.attempts[greedy:]}) > 1  # sampled, not one reply repeated
