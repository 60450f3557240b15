"""What a run pays before and after its tasks: the control models walk the agent's graph without
LangGraph, and the chart is drawn by a child process that imported matplotlib while the run
went on; so no pytest process of a control run imports either (each is most of a second)."""

from __future__ import annotations

import json
import sys

import pytest

from pytest_humanfix.reporting.chart import ChartError, RunChart
from pytest_humanfix.reporting.summary import build

HEAVY = ("langgraph", "matplotlib", "torch", "transformers", "datasets")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Each pytest process of the run writes down which heavy modules it imported.
MODULES_PROBE = f"""
import json, sys

def pytest_unconfigure(config):
    # Not PYTEST_XDIST_WORKER: an outer xdist run passes its own down to this one.
    role = getattr(config, "workerinput", {{}}).get("workerid", "controller")
    loaded = [m for m in {HEAVY!r} if m in sys.modules]
    (config.rootpath / f"modules-{{role}}.json").write_text(json.dumps(loaded))
"""


def test_a_control_run_imports_neither_langgraph_nor_matplotlib(humanfix_pytester):
    humanfix_pytester.makeconftest(MODULES_PROBE)
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=4", "-n", "2",
                                                    "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    loaded = {path.stem.removeprefix("modules-"): json.loads(path.read_text())
              for path in humanfix_pytester.path.glob("modules-*.json")}
    assert loaded == {"controller": [], "gw0": [], "gw1": []}
    # The chart is drawn all the same, and on disk before the run says so.
    result.stdout.fnmatch_lines(["wrote reports/summary.png"])
    png = humanfix_pytester.path / "reports" / "summary.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert not list(png.parent.glob("*.partial.png"))


def test_a_chart_that_cannot_be_written_is_a_warning_and_not_listed(humanfix_pytester):
    (humanfix_pytester.path / "reports" / "summary.png").mkdir(parents=True)
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["WARNING: humanfix could not draw *reports/summary.png: the "
                                 "chart process ended with status 1: IsADirectoryError*"])
    result.stdout.no_fnmatch_line("wrote *summary.png")
    result.stdout.fnmatch_lines(["wrote *reports/summary.md"])
    assert not list((humanfix_pytester.path / "reports").glob("*.partial.png"))


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a run's process, which has not loaded matplotlib (this one has: charts_loaded)."""
    monkeypatch.delitem(sys.modules, "matplotlib.figure")


SUMMARY = build([{"task_id": "a", "bug_type": "x", "outcome": "fixed", "seconds": 1.5},
                 {"task_id": "b", "bug_type": "y", "outcome": "unfixed", "seconds": 0.5}],
                {"model": "m"})


@pytest.mark.usefixtures("fresh_process")
def test_the_chart_child_draws_the_summary_it_is_sent(tmp_path):
    chart = RunChart()
    assert chart.process is not None
    path = tmp_path / "summary.png"
    assert chart.draw(SUMMARY, [{"seconds": 1.5, "tokens": {"prompt": 9}}], path) == path
    chart.finish()
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert [p.name for p in tmp_path.iterdir()] == ["summary.png"]  # no partial file left


@pytest.mark.usefixtures("fresh_process")
def test_a_failing_chart_child_says_why(tmp_path):
    chart = RunChart()
    chart.draw({"run": {}}, [], tmp_path / "summary.png")
    with pytest.raises(ChartError, match="status 1: KeyError: 'by_bug_type'"):
        chart.finish()
    assert not list(tmp_path.iterdir())


@pytest.mark.usefixtures("fresh_process")
def test_a_run_that_draws_nothing_ends_its_chart_child(tmp_path):
    chart = RunChart()
    process = chart.process
    assert process is not None
    chart.finish()
    assert process.returncode == 0
    assert chart.process is None
