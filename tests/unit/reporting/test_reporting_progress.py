"""The live progress (reporting/progress.py): the line's figures, the plain lines' cadence in a
log on a fake clock, and nothing under -q. On a pseudo-terminal: runs/test_live_line.py."""

from __future__ import annotations

from types import SimpleNamespace

from reporting_records import record

from pytest_humanfix.reporting.progress import Cadence, LiveLine, progress_text
from pytest_humanfix.reporting.rates import rate
from pytest_humanfix.reporting.terminal import interval


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Reporter:
    """The terminal reporter's calls the live line makes, on a writer that is no terminal."""

    def __init__(self, terminal: bool = False) -> None:
        self.lines: list[str] = []
        self.rewrites: list[str] = []
        self.isatty = terminal

    def write_line(self, line: str) -> None:
        self.lines.append(line)

    def write(self, text: str) -> None:
        raise AssertionError(f"a newline written at the start of a line: {text!r}")

    def rewrite(self, line: str, **markup: bool) -> None:
        self.rewrites.append(line)


def config_for(reporter: Reporter, verbosity: int = 0) -> SimpleNamespace:
    return SimpleNamespace(
        pluginmanager=SimpleNamespace(get_plugin=lambda name: reporter),
        get_verbosity=lambda: verbosity, getoption=lambda name, default=None: "fd")


def records(done: int) -> list:
    return [record(f"t{i}", "fixed" if i % 2 else "unfixed",
                   tokens={"prompt": 30, "completion": 10}) for i in range(done)]


def test_the_line_holds_the_runs_figures_so_far():
    done = [*records(4), record("e", "error", error="worker crashed"),
            record("late", "error", item_timeout=True)]
    text = progress_text(done, 12, elapsed=60.0)
    assert text == (f"humanfix 6/12 tasks | fixed 2, pass@1 {interval(rate(done))} | "
                    "errors 1 | 3 tok/s | 1m00s left")
    assert interval(rate(done)) == "33.3% [9.7%, 70.0%]"  # 2 of 6: the errors not fixed
    assert progress_text(done, 6, elapsed=7300.0).endswith("| done")
    assert progress_text([], 6, elapsed=5.0).endswith("| time left unknown")
    assert progress_text(records(1), 3601, elapsed=3.0).endswith("| 3h00m left")


def test_a_log_gets_a_line_once_both_a_tenth_and_a_minute_have_passed():
    clock = Clock()
    cadence = Cadence(clock)
    clock.now += 30
    assert not cadence.due(50, 100), "half the run, but not yet a minute"
    clock.now += 30
    assert cadence.due(50, 100)
    clock.now += 600
    assert not cadence.due(59, 100), "ten minutes, but not yet a tenth more"
    assert cadence.due(60, 100)
    clock.now += 59
    assert not cadence.due(100, 100)


def test_the_plugin_writes_plain_lines_at_the_cadence_and_the_last_at_the_end():
    clock, reporter = Clock(), Reporter()
    done: list = []
    live = LiveLine(config_for(reporter), lambda: done, lambda: 20, clock)
    live.pytest_sessionstart()
    assert (live.quiet, live.in_place) == (False, False)
    for count in range(1, 21):
        done[:] = records(count)
        clock.now += 20
        live.update()
    # A line at 3, 6, 9, ... minutes (a tenth is 2 tasks, passed long before each minute).
    assert [line.split(" tasks")[0] for line in reporter.lines] == [
        "humanfix 3/20", "humanfix 6/20", "humanfix 9/20", "humanfix 12/20", "humanfix 15/20",
        "humanfix 18/20"]
    loop = live.pytest_runtestloop()
    next(loop)
    try:
        loop.send(None)
    except StopIteration:
        pass
    assert reporter.lines[-1].startswith("humanfix 20/20 tasks") and "| done" in reporter.lines[-1]
    assert reporter.rewrites == []


def test_a_run_that_ran_no_task_ends_without_a_line():
    reporter = Reporter()
    live = LiveLine(config_for(reporter), lambda: [], lambda: 164, Clock())
    live.pytest_sessionstart()
    loop = live.pytest_runtestloop()
    next(loop)
    try:
        loop.throw(KeyboardInterrupt())
    except KeyboardInterrupt:
        pass
    assert reporter.lines == []


def test_nothing_under_q():
    reporter = Reporter(terminal=True)
    live = LiveLine(config_for(reporter, verbosity=-1), lambda: records(3), lambda: 3, Clock())
    live.pytest_sessionstart()
    live.update()
    assert (reporter.lines, reporter.rewrites) == ([], [])


def test_on_a_terminal_the_line_is_rewritten_and_erased_before_other_output():
    clock, reporter = Clock(), Reporter(terminal=True)
    done: list = []
    live = LiveLine(config_for(reporter), lambda: done, lambda: 3, clock)
    live.pytest_sessionstart()
    assert live.in_place
    for count in (1, 2):
        done[:] = records(count)
        live.pytest_runtest_logstart()
        clock.now += 1
        live.update()
    assert [r.split(" tasks")[0] for r in reporter.rewrites] == [
        "humanfix 1/3", "", "", "humanfix 2/3"]
    assert reporter.lines == []


def test_the_line_counts_the_fixes_the_summary_counts():
    from pytest_humanfix.reporting.summary import task_counts

    done = [*records(4), record("k", "fixed", known_failure="the reference fails here")]
    assert task_counts(done)["fixed"] == 2
    assert "| fixed 2, pass@1 " in progress_text(done, 10, elapsed=60.0)


def test_resumed_tasks_count_as_done_but_not_in_the_pace_or_the_tokens():
    # Four of five resumed tasks reported again from the earlier run at once, then two run in
    # 60 s: of the four tasks left, the fifth resumed one takes no time, three are run.
    resumed = {f"old{n}" for n in range(5)}
    done = [record(f"old{n}", "fixed", tokens={"prompt": 9000, "completion": 1000})
            for n in range(4)] + records(2)
    text = progress_text(done, 10, elapsed=60.0, resumed=resumed)
    assert text.startswith("humanfix 6/10 tasks | fixed 5, ")
    # 80 tokens in 60 s; 30 s a task, 3 tasks to run.
    assert text.endswith("| 1 tok/s | 1m30s left")
    assert progress_text(done[:4], 10, elapsed=1.0, resumed=resumed).endswith(
        "| 0 tok/s | time left unknown")
