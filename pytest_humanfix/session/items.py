"""The collector and the item: one pytest item per HumanEvalFix task (docs/architecture.md)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:  # How pytest's doctest items take fixtures. Private: a pytest that moved it runs the items
    # without fixtures, the agent then the one --humanfix-agent names.
    from _pytest.fixtures import TopRequest
except ImportError:  # pragma: no cover - a pytest without it
    TopRequest = None  # type: ignore[assignment,misc]

from ..agent.loader import FIXTURE as AGENT_FIXTURE, AgentLoadError, agent_of, is_agent
from ..agent.routing import GRAPHS
from ..dataset import Task
from ..jsonl import storable_text
from ..records import EarlierRun, Record, TaskResult, earlier_run
from ..reporting.junit import known_failure_reason, task_properties
from . import RUNNER, timeouts

DIFF_LINES_SHOWN = 60


class HumanfixDirectory(pytest.Directory):
    """Stands in for the invocation folder: yields the selected tasks, in dataset order."""

    def collect(self) -> Iterator[TaskItem]:
        for task in self.config.stash[RUNNER].tasks:
            yield TaskItem.from_parent(self, name=task.item_name, task=task)


def no_diff(result: TaskResult) -> str:
    """What stands for the diff where it is empty: the agent made no candidate, or its
    candidate is the buggy code."""
    raised = result.agent_error
    if raised is not None:
        said = f"{raised['type']}: {raised['message']}" if raised["message"] else raised["type"]
        return f"(no candidate: the agent raised {said})"
    if not result.code:
        return "(no candidate)"
    return "(the candidate is the buggy code, unchanged)"


def failure_report(task: Task, result: TaskResult) -> str:
    diff = result.diff.splitlines() or [no_diff(result)]
    if len(diff) > DIFF_LINES_SHOWN:
        diff = diff[:DIFF_LINES_SHOWN] + [f"... {len(diff) - DIFF_LINES_SHOWN} more diff lines"]
    return "\n".join([
        f"{task.task_id} {task.entry_point} [{task.bug_type}]: "
        + ("the agent raised" if result.agent_error else "not fixed"),
        "first failure:",
        *("    " + line for line in (result.failure or "?").splitlines()),
        "diff of the candidate against the buggy code:",
        *diff,
    ])


def said(message: str) -> str:
    """An item's message as its record keeps text (`jsonl.storable_text`): it crosses xdist,
    reaches the terminal and pytest's JUnit file, whatever the model wrote in it."""
    return storable_text(message)[0]


class TaskItem(pytest.Item):
    """Setup runs the repair (a harness fault there is a pytest error); the call judges it."""

    def __init__(self, *, task: Task, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task = task
        self.result: TaskResult | None = None
        self.humanfix_record: Record | None = None
        # Earlier runs of this item's protocol (pytest-rerunfailures, the flaky marker, any
        # plugin that runs an item again): the last run decides, these stay in its record.
        self.reruns: list[EarlierRun] = []
        self.add_marker("humanfix")
        self.extra_keyword_matches.add(task.bug_slug)
        self.extra_keyword_matches.add(task.language)  # -k rust, -k js
        # The agent is the humanfix_agent fixture, which a conftest.py overrides as any
        # fixture; the item takes fixtures the way pytest's own doctest items do.
        self.funcargs: dict[str, object] = {}
        if TopRequest is not None:
            self.add_marker(pytest.mark.usefixtures(AGENT_FIXTURE))
            info = self.session._fixturemanager.getfixtureinfo(node=self, func=None, cls=None)
            self._fixtureinfo = info
            self.fixturenames = info.names_closure
            self._initrequest()

    def _initrequest(self) -> None:
        """A fresh fixture request; pytest-rerunfailures calls it before running an item
        again, as it does for a doctest item."""
        self.funcargs = {}
        self._request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type]

    def setup(self) -> None:
        runner = self.config.stash[RUNNER]
        if self.humanfix_record is not None:
            self.reruns.append(earlier_run(self.humanfix_record))
            self.user_properties.clear()
        record = runner.state.resumed.get(self.task.task_id)
        if record is not None:  # --humanfix-resume: reproduce the recorded outcome
            self.result = TaskResult.from_record(record)
            self.humanfix_record = record
            self.user_properties.append(("resumed_from", str(record.get("run_id"))))
        else:
            started = time.monotonic()
            try:
                self.result = self.agent_error() or runner.evaluate(
                    self.task, self.funcargs[AGENT_FIXTURE])
            except pytest.fail.Exception as exc:
                if not timeouts.fired(exc):
                    raise
                self.result = timeouts.timed_out(self.task, exc, time.monotonic() - started)
            self.humanfix_record = runner.record(self.result)
        if self.reruns:
            self.humanfix_record = {**self.humanfix_record, "reruns": list(self.reruns)}
        self.user_properties.extend([
            ("task_id", self.task.task_id),
            ("bug_type", self.task.bug_type),
            ("outcome", self.result.outcome),
            *task_properties(self.humanfix_record),
        ])
        if self.result.outcome == "error":
            kind = "item timeout" if self.result.item_timeout else "harness error"
            pytest.fail(said(f"{kind} on {self.task.task_id}: {self.result.error}"),
                        pytrace=False)

    def agent_error(self) -> TaskResult | None:
        """Sets up the item's fixtures, the agent's among them; an error outcome when one of
        them fails or the agent is none, so that the task still has its record."""
        try:
            if TopRequest is None:  # pragma: no cover - a pytest without it: no fixtures
                self.funcargs[AGENT_FIXTURE] = agent_of(
                    self.config, self.config.stash[RUNNER].settings.agent)
            else:
                self._request._fillfixtures()
            agent = self.funcargs[AGENT_FIXTURE]
            # None is the plugin's own fixture's answer for a built-in agent.
            built_in = agent is None and self.config.stash[RUNNER].settings.agent in GRAPHS
            if not built_in and not is_agent(agent):
                raise AgentLoadError(
                    f"the {AGENT_FIXTURE} fixture returned {type(agent).__name__}, not an "
                    "agent: return a function that takes the context, or a compiled "
                    "LangGraph graph.")
        except Exception as exc:
            return TaskResult.error_for(self.task, "".join(
                traceback.format_exception_only(exc)).strip())
        return None

    def runtest(self) -> None:
        assert self.result is not None
        known = (self.humanfix_record or {}).get("known_failure")
        if known and self.result.outcome != "error":
            # Its reference solution cannot pass here (or not always): counted apart, never
            # scored, whatever this run's outcome.
            pytest.xfail(known_failure_reason(self.result.outcome, known))
        if self.result.outcome == "unfixed":
            if self.config.stash[RUNNER].settings.gated:
                # A gate decides the run; an unfixed task is an expected failure, so the exit
                # status, the terminal and the JUnit file all say the same.
                pytest.xfail(said("not fixed\n" + failure_report(self.task, self.result)))
            pytest.fail(said(failure_report(self.task, self.result)), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        task = self.task
        return self.path, None, f"{task.task_id} {task.entry_point} [{task.bug_type}]"
