"""What the repair agent's nodes share: the task's fixed context (`RepairContext`, LangGraph's
run-scoped context), the state that flows from node to node (`RepairState`), and the runtime
that carries the context (docs/agent.md, "The repair loop")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypedDict

from ..dataset import Task
from ..models.base import Message, Model
from ..records import Attempt, TaskResult
from ..sandbox.environment import Sandbox, Verdict
from . import prompts
from .config import RepairConfig


@dataclass(frozen=True)
class RepairContext:
    """What stays fixed while one task is repaired (LangGraph's run-scoped context)."""

    task: Task
    model: Model
    sandbox: Sandbox
    config: RepairConfig
    # --humanfix-tests plus: runs a candidate on HumanEval+ (None without it). Only `finish`
    # calls it: the repair rounds never see HumanEval+.
    plus: Callable[[str], Verdict] | None = None
    # The rounds that are first attempts, at the first attempt's temperature, and whether a
    # reply that repeats failed code is asked again (the agent's `routing.Graph`).
    first_attempts: int = 1
    asks_again: bool = True

    def temperature(self, state: RepairState) -> float:
        """The temperature of the reply asked for in `state`: its round's, or its ask again's
        (`RepairConfig.temperature_of`)."""
        return self.config.temperature_of(state["round"], state["resamples"], self.first_attempts)

    def may_ask_again(self, state: RepairState) -> bool:
        """Whether the latest reply, a repeat of failed code, is asked again within its round:
        only in an agent that asks again, once per --humanfix-ask-again-temperature value."""
        return self.asks_again and state["resamples"] < self.config.resamples

    @property
    def base(self) -> str:
        return prompts.prompt_base(self.task, self.config.variant)

    @property
    def round_tests(self) -> tuple[str, str]:
        """(name, code) of the tests the agent may run during repair."""
        if self.config.variant == "docs":
            return "example_test", self.task.example_test
        return "test", self.task.test


class RepairRuntime(Protocol):
    """What a node needs of the runtime LangGraph passes it (a `langgraph.runtime.Runtime`)."""

    @property
    def context(self) -> RepairContext: ...


class RepairState(TypedDict):
    messages: list[Message]  # the chat so far, ending with a user (or tool) turn before a reply
    attempts: list[Attempt]         # one per reply, in order
    rounds_left: int                # rounds still allowed after the latest one
    round: int                      # the round of the next reply (0: the first attempt)
    resamples: int                  # asks again spent in that round
    result: TaskResult | None       # set by `finish`


@dataclass(frozen=True)
class PlainRuntime:
    """The part of LangGraph's Runtime the nodes read, for `walk`."""

    context: RepairContext
