"""A per-item timeout for humanfix items through pytest-timeout, and what a timeout leaves behind.

Each item gets a `timeout` marker just before it runs, unless the user set a timeout for pytest
(`--timeout`, the `timeout` ini value or PYTEST_TIMEOUT) or marked the item: theirs wins. The
marker asks for the `signal` method: SIGALRM raises pytest-timeout's failure inside the running
item (xdist runs items in each worker's main thread, where signals arrive), the item records an
error outcome, and the run goes on. The `thread` method would instead end the whole process with
`os._exit`: without xdist that ends the run (the JSONL keeps every finished task, each line
flushed); under xdist the controller writes an error record for the item the worker died on.
"""

from __future__ import annotations

import os
import signal

import pytest

from ..dataset import Task
from ..records import TaskResult
from ..settings import Settings

METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
TIMEOUT_MESSAGE_END = "from pytest-timeout."  # pytest-timeout's PYTEST_FAILURE_MESSAGE


def item_timeout(settings: Settings, limit: float | None = None) -> float:
    """Seconds one task may take: the user's --humanfix-item-timeout, else every reply of every
    sample allowed a request timeout to generate and an execution to run, plus two grading runs
    per sample (the graded run holds the guard; a run the guard stops, or a test it cannot sit
    in, costs a second one), and a --humanfix-repeat-check reply and its grading runs
    (the run's first reply graded again among them). An execution may take its limit
    (`limit`, the task's calibrated one, else the Python floor) twice: a timeout is re-run
    once.
    (The model is loaded before the timer starts.)"""
    if settings.item_timeout is not None:
        return settings.item_timeout
    execution = 2 * (settings.timeout_for("python") if limit is None else limit)
    replies = settings.most_replies * settings.samples
    total = replies * (settings.request_timeout + execution) + 2 * settings.samples * execution
    if settings.repeat_check:
        total += settings.request_timeout + 4 * execution
    return total


def user_timeout_given(config: pytest.Config) -> bool:
    return (config.getoption("timeout", None) is not None
            or bool(os.environ.get("PYTEST_TIMEOUT"))
            or bool(config.getini("timeout")))


def apply_item_timeout(item: pytest.Item, settings: Settings, limit: float) -> None:
    config = item.config
    if not config.pluginmanager.hasplugin("timeout") or user_timeout_given(config) \
            or item.get_closest_marker("timeout") is not None:
        return
    item.add_marker(pytest.mark.timeout(item_timeout(settings, limit), method=METHOD))


def fired(exc: BaseException) -> bool:
    """Whether `exc` is pytest-timeout stopping the item (signal method)."""
    return isinstance(exc, pytest.fail.Exception) and str(exc).endswith(TIMEOUT_MESSAGE_END)


def timed_out(task: Task, exc: BaseException, seconds: float) -> TaskResult:
    return TaskResult.error_for(
        task, f"item timeout fired after {seconds:.1f} s ({exc}); the task is not scored. "
              "Raise --humanfix-item-timeout (or pytest's --timeout).", seconds)
