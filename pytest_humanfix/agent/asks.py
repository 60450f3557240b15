"""What a built-in agent asks its model, as data: an `Ask` names the `Model` method and its
keyword arguments. The nodes send it; a worker that asks a task's first prompt ahead
(session/ahead.py) makes the same Ask from the same functions, so the reply handed to the agent is
the reply its own request would have had (docs/models.md, "Asking ahead")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..dataset import Task
from ..models.base import Generation, Message, Model, PromptKind
from . import prompts
from .config import RepairConfig


@dataclass(frozen=True)
class Ask:
    method: Literal["generate", "complete", "continue_answer"]
    arguments: dict[str, Any]

    def send(self, model: Model) -> Generation:
        method: Callable[..., Generation] = getattr(model, self.method)
        return method(**self.arguments)


def proposal(task: Task, config: RepairConfig, kind: PromptKind, messages: list[Message],
             temperature: float) -> Ask:
    """`propose`'s request: the conversation's reply asked for the way the model is prompted."""
    if kind == "completion":
        base = prompts.prompt_base(task, config.variant)
        return Ask("complete", {"prompt": prompts.completion_prompt(messages, base),
                                "stop": prompts.stop_words(task), "task": task,
                                "temperature": temperature})
    if kind == "primed":
        return Ask("continue_answer", {
            "messages": messages, "start": prompts.answer_start(task, config.variant),
            "stop": prompts.stop_words(task), "task": task, "temperature": temperature})
    return Ask("generate", {"messages": messages, "task": task, "temperature": temperature,
                            "stop": prompts.chat_stop(config.chat_stop, task)})


def tool_call(task: Task, config: RepairConfig, kind: PromptKind, messages: list[Message],
              temperature: float) -> Ask:
    """`call`'s request: the conversation's reply, offered the run_tests tool (always chat)."""
    return Ask("generate", {"messages": messages, "task": task, "temperature": temperature,
                            "tools": [prompts.run_tests_tool(config.variant)]})


# What an agent's asking node requests, from the task, the configuration, how the model is
# prompted, the conversation so far and the reply's temperature.
Asking = Callable[[Task, RepairConfig, PromptKind, list[Message], float], Ask]
