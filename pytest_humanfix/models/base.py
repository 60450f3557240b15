"""The backend-free model interface: what the agent asks of any model (`Model`: chat, completion
or primed prompting), the reply it gets (`Generation`) and the two errors a model can raise.
Importing it costs nothing; `specs.load_model` imports a backend only when a spec names it.
See docs/models.md, "Model specs".
"""

from __future__ import annotations

import abc
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..computed_by import ComputedBy
from ..dataset import Task
from .toolcalls import Tool, ToolCall

PromptKind = Literal["chat", "completion", "primed"]
# Why a reply ended: the model stopped (end of sequence or a stop word), or it ran out of tokens.
FinishReason = Literal["stop", "length"]
# A chat message as OpenAI's API has it: role and content, and for the function-calling agent an
# assistant's `tool_calls` and a tool result's `tool_call_id`.
Message = dict[str, Any]


class ModelSpecError(Exception):
    """The model spec names nothing we can load; the message lists what is known."""


class ModelLoadError(Exception):
    """The model exists in name but cannot be loaded or reached: a harness fault."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    finish_reason: FinishReason = "stop"
    engine: str = ""  # what produced it: transformers, a server's engine, control, replay
    server: str = ""  # the base URL of the server that answered, for a server's reply
    # The tools the reply called, when it was asked with tools (`text` is then what it said
    # beside them).
    tool_calls: list[ToolCall] = field(default_factory=list)


class Model(Protocol):
    spec: str
    prompt: PromptKind

    @property
    def computed_by(self) -> ComputedBy:
        """What computes its replies: engine, build, kernels, device, dtype, determinism
        (`computed_by`); plain data, written in every record."""
        ...

    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        """The reply to a conversation (chat prompting), sampled at `temperature` (None: the
        run's --humanfix-temperature), ended before the first of `stop`; given `tools`
        (OpenAI's declarations), the reply may call them (`Generation.tool_calls`)."""
        ...

    def complete(self, prompt: str, stop: list[str], task: Task,
                 temperature: float | None = None) -> Generation:
        """The continuation of `prompt`, ended before the first of `stop` (completion prompting)."""
        ...

    def continue_answer(self, messages: list[Message], start: str, stop: list[str],
                        task: Task, temperature: float | None = None) -> Generation:
        """The continuation of `start`, the beginning of the model's answer to the conversation
        (primed prompting), ended before the first of `stop`; `start` itself is not repeated."""
        ...


class RecordedAnswers(abc.ABC):
    """A model whose every answer is a recorded reply, whichever way it is prompted: a completion
    or a primed answer was recorded as the continuation it is, so it is replayed as it was."""

    @abc.abstractmethod
    def generate(self, messages: list[Message], task: Task, temperature: float | None = None,
                 tools: list[Tool] | None = None,
                 stop: list[str] | None = None) -> Generation:
        """The task's recorded reply."""

    def complete(self, prompt: str, stop: list[str], task: Task,
                 temperature: float | None = None) -> Generation:
        return self.generate([], task)

    def continue_answer(self, messages: list[Message], start: str, stop: list[str],
                        task: Task, temperature: float | None = None) -> Generation:
        return self.generate([], task)


def sample_seed(seed: int, task_id: str, reply: int) -> int:
    """A task's n-th sampled reply draws the same sample whichever worker runs it, in whatever
    order."""
    return zlib.crc32(f"{seed}:{task_id}:{reply}".encode())


class ReplySeeds:
    """The seed of each reply a backend asks for, one rule for every backend (in-process and
    served): a greedy reply takes the run's seed and counts nothing; a sampled one takes
    `sample_seed` of the task's count of sampled replies before it. So one --humanfix-seed
    draws the same samples in process and on a server, and a greedy round between samples
    shifts none of them (`rewrite`'s rounds 2 and 3 draw `resample`'s rounds 1 and 2)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._sampled: Counter[str] = Counter()

    def next(self, task: Task, temperature: float) -> int:
        if temperature <= 0:
            return self.seed
        self._sampled[task.task_id] += 1
        return sample_seed(self.seed, task.task_id, self._sampled[task.task_id] - 1)


def settle_prompt(requested: str, has_chat_template: bool) -> PromptKind:
    """--humanfix-prompt for one model: auto is chat where the model has a chat template."""
    if requested == "auto":
        return "chat" if has_chat_template else "completion"
    if requested == "completion":
        return "completion"
    return "primed" if requested == "primed" else "chat"


def cut_at_stop(text: str, stop: list[str]) -> str:
    """`text` up to the first stop word, as an OpenAI-compatible server returns it."""
    cut = min((i for i in (text.find(word) for word in stop) if i != -1), default=len(text))
    return text[:cut]
