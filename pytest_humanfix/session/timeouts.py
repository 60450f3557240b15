"""A per-item timeout for humanfix items through pytest-timeout (its `signal` method, unless the
user set a timeout of their own), and what a timeout leaves behind (`TaskResult.item_timeout`).
The item's clock runs on everything but generation (`generation_off_clock`): a slow model is no
timeout. Why, and why not the `thread` method: docs/sandbox.md, "Timeouts agree in layers".
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ..dataset import Task
from ..models.base import Generation, Model, PromptKind
from ..records import TaskResult
from ..settings import Settings

METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
TIMEOUT_MESSAGE_END = "from pytest-timeout."  # pytest-timeout's PYTEST_FAILURE_MESSAGE
# What a task does beside its executions and its replies (extraction, checks, the sandbox's
# bookkeeping, a warm executor started anew after a candidate killed it: up to a minute).
HARNESS_SECONDS = 60.0


def item_timeout(settings: Settings, limit: float | None = None,
                 plus_limit: float | None = None) -> float:
    """Seconds one task may take, generation excluded: the user's --humanfix-item-timeout,
    else an execution for every reply of every sample, plus two grading runs per sample (the
    graded run holds the guard; a run the guard stops, or a test it cannot sit in, costs a
    second one), and a --humanfix-repeat-check's grading runs (the run's first reply graded
    again among them), and HARNESS_SECONDS. An execution may take its limit (`limit`, the
    task's calibrated one, else the Python floor) twice: a timeout is re-run once. Where the
    alarm cannot be stopped while a reply is generated (no SIGALRM), each reply also gets a
    request timeout. With --humanfix-tests plus (`plus_limit`, the limit of the task's
    HumanEval+ execution), each sample's final candidate also runs there, twice if it times
    out. (The model is loaded before the timer starts.)"""
    if settings.item_timeout is not None:
        return settings.item_timeout
    execution = 2 * (settings.timeout_for("python") if limit is None else limit)
    replies = settings.most_replies * settings.samples
    total = replies * execution + 2 * settings.samples * execution + HARNESS_SECONDS
    if settings.repeat_check:
        total += 4 * execution
    if plus_limit is not None:
        total += 2 * plus_limit * settings.samples
    if METHOD != "signal":
        total += (replies + bool(settings.repeat_check)) * settings.request_timeout
    return total


@contextmanager
def generation_off_clock() -> Iterator[None]:
    """Stops the item's alarm (pytest-timeout's signal method sets ITIMER_REAL) for the time
    of the block, then sets it again to what it had left. Without an alarm set, nothing."""
    if METHOD != "signal":
        yield
        return
    left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left, interval)


class OffClock:
    """A task's model whose replies are generated off the item's clock; anything else is
    the model's own (`servers_out`, ...)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.spec: str = model.spec
        self.prompt: PromptKind = model.prompt

    def generate(self, *args: Any, **kwargs: Any) -> Generation:
        with generation_off_clock():
            return self.model.generate(*args, **kwargs)

    def complete(self, *args: Any, **kwargs: Any) -> Generation:
        with generation_off_clock():
            return self.model.complete(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def user_timeout_given(config: pytest.Config) -> bool:
    return (config.getoption("timeout", None) is not None
            or bool(os.environ.get("PYTEST_TIMEOUT"))
            or bool(config.getini("timeout")))


def apply_item_timeout(item: pytest.Item, settings: Settings, limit: float,
                       plus_limit: float | None = None) -> None:
    config = item.config
    if not config.pluginmanager.hasplugin("timeout") or user_timeout_given(config) \
            or item.get_closest_marker("timeout") is not None:
        return
    item.add_marker(pytest.mark.timeout(item_timeout(settings, limit, plus_limit),
                                        method=METHOD))


def fired(exc: BaseException) -> bool:
    """Whether `exc` is pytest-timeout stopping the item (signal method)."""
    return isinstance(exc, pytest.fail.Exception) and str(exc).endswith(TIMEOUT_MESSAGE_END)


def timed_out(task: Task, exc: BaseException, seconds: float) -> TaskResult:
    result = TaskResult.error_for(
        task, f"item timeout fired after {seconds:.1f} s ({exc}; generation is not counted); "
              "the task is scored not fixed. Raise --humanfix-item-timeout (or pytest's "
              "--timeout).",
        seconds)
    result.item_timeout = True
    return result
