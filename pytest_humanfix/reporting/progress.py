"""The live progress of a run, from the controller: tasks done of the selection, fixed so far
with its interval (`rates.rate`), harness errors, tokens per second and the time left. On a
terminal one line rewritten in place; in a log a plain line every 10% or every minute,
whichever comes later; nothing under -q. docs/reports.md, "The live line".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Generator
from typing import Any

import pytest

from ..records import Record
from .rates import harness_error, rate, scored
from .terminal import interval

Clock = Callable[[], float]
# What pytest_report_teststatus returns: category, letter, word (a word may carry markup).
TestStatus = tuple[str, str, Any]

# pass@1 reads every record, a few milliseconds at thousands of tasks: a terminal's line is
# recomputed once this many times its last computation's cost has passed, so that it takes
# at most 1% of the controller's time, and a small run's line is fresh after every task.
COST_FACTOR = 100


def duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def progress_text(records: Collection[Record], total: int, elapsed: float,
                  resumed: Collection[str] = ()) -> str:
    """The line: `done/total`, the scored tasks fixed and pass@1 so far with its 95% interval,
    harness errors, tokens per second of wall time, and the time left at the pace so far. The
    `resumed` tasks (--humanfix-resume) count as done, but spent nothing in this run's time:
    their tokens and their number are left out of the pace."""
    done = len(records)
    fixed = sum(r["outcome"] == "fixed" for r in records if scored(r))
    errors = sum(harness_error(r) for r in records)
    ran = [r for r in records if r["task_id"] not in resumed]
    tokens = sum(int((r.get("tokens") or {}).get("prompt", 0))
                 + int((r.get("tokens") or {}).get("completion", 0)) for r in ran)
    so_far = rate(list(records))
    waiting = len(resumed) - (done - len(ran))  # resumed tasks not yet reported take no time
    left = ("done" if done >= total else "time left unknown" if not ran
            else f"{duration(elapsed / len(ran) * max(total - done - waiting, 0))} left")
    return (f"humanfix {done}/{total} tasks | fixed {fixed}, pass@1 {interval(so_far)} | "
            f"errors {errors} | {tokens / max(elapsed, 1e-9):.0f} tok/s | {left}")


class Cadence:
    """When a log gets its next plain line: once a tenth of the selection AND a minute have
    both passed since the last one, so that a fast run prints at most ten lines and a slow one
    at most one a minute. The run's end prints the last line whatever the cadence."""

    def __init__(self, clock: Clock, step: float = 0.1, period: float = 60.0) -> None:
        self.clock, self.step, self.period = clock, step, period
        self.last_time, self.last_done = clock(), 0

    def due(self, done: int, total: int) -> bool:
        now = self.clock()
        if done - self.last_done < self.step * total or now - self.last_time < self.period:
            return False
        self.last_time, self.last_done = now, done
        return True


class LiveLine:
    """The pytest plugin that shows the progress. `records` and `total` are read as each task
    finishes: the controller's records and the selection's size; `resumed`, the task ids whose
    records a resumed run reports again."""

    def __init__(self, config: pytest.Config, records: Callable[[], Collection[Record]],
                 total: Callable[[], int], clock: Clock = time.monotonic,
                 resumed: Collection[str] = ()) -> None:
        self.records, self.total, self.clock, self.resumed = records, total, clock, resumed
        self.config = config
        self.started = clock()
        self.reporter: pytest.TerminalReporter | None = None
        self.quiet, self.in_place = True, False
        self.cadence = Cadence(clock)
        self.text, self.drawn_at, self.cost, self.drawn = "", float("-inf"), 0.0, False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self) -> None:
        # The terminal reporter is registered at configure time, maybe after this plugin.
        config = self.config
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        verbosity = config.get_verbosity()
        self.quiet = self.reporter is None or verbosity < 0
        # In place only where pytest writes one letter per task, which the line stands in for
        # (under -v each task's own line stays, and the plain lines go between them), and only
        # while output is captured (under -s items write straight to the terminal).
        self.in_place = (self.reporter is not None and verbosity == 0
                         and bool(self.reporter.isatty)
                         and config.getoption("capture", "fd") != "no")

    def erase(self) -> None:
        if self.drawn and self.reporter is not None:
            self.reporter.rewrite("", erase=True)
            self.reporter.rewrite("")
            self.drawn = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self) -> None:
        self.erase()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self) -> None:
        self.erase()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self) -> Generator[None, None, None]:
        yield  # after pytest's own, which may end the line of letters with its percentage
        self.update()

    def line(self) -> str:
        return progress_text(self.records(), self.total(), self.clock() - self.started,
                             self.resumed)

    def update(self) -> None:
        if self.quiet or self.reporter is None:
            return
        if not self.in_place:
            if self.cadence.due(len(self.records()), self.total()):
                self.write_plain()
            return
        now = self.clock()
        if now - self.drawn_at >= COST_FACTOR * self.cost:
            self.text = self.line()
            self.drawn_at, self.cost = now, self.clock() - now
        self.reporter.rewrite(self.text, bold=True)
        self.drawn = True

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport
                                 ) -> Generator[None, TestStatus, TestStatus]:
        status = yield
        # A task's letter would land on the live line: its outcome still counts, and a
        # failure's details still print at the end.
        if self.in_place and "humanfix" in report.keywords and status:
            return status[0], "", ""
        return status

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self) -> Generator[None, object, object]:
        # Around pytest's own wrapper, which ends the letters with their percentage.
        try:
            return (yield)
        finally:
            self.erase()
            if (not self.quiet and not self.in_place and self.reporter is not None
                    and self.records()):
                self.write_plain()

    def write_plain(self) -> None:
        """The line on a line of its own, never after the task letters pytest left open."""
        assert self.reporter is not None
        # pytest's own count of what stands on the current line (a private name, so read
        # with a default): write_line alone breaks only a line that began with a file name.
        if getattr(self.reporter, "_width_of_current_line", 0):
            self.reporter.write("\n")
        self.reporter.write_line(self.line())
