"""summary.md as a pull request's comment (reporting/files.py), from literal records and a
literal baseline: the baseline's pass@1, the change and its p-value, what the baseline was, the
task lists in task id order, and the unfixed tasks and agent errors folded with their reasons."""

from __future__ import annotations

from reporting_records import record

from pytest_humanfix.reporting.files import markdown
from pytest_humanfix.reporting.gates import compare, gate_checks
from pytest_humanfix.reporting.summary import attach_gates, build, times_from_records

IDS = ["Python/10", "Python/2", "Python/100", "Python/1", "Python/7"]


def pull_request_summary() -> str:
    baseline = {t: record(t, run_id="20261127T101010-abcd1234", model="qwen-coder",
                          computed_by={"engine": "llama.cpp", "version": "b4000"})
                for t in IDS}
    baseline["Python/7"] = record("Python/7", "unfixed", run_id="20261127T101010-abcd1234")
    now = [record("Python/10", "unfixed", failure="AssertionError\nassert f(2) == 3"),
           record("Python/2", "unfixed", failure="  \nNameError: name 'x' is not defined"),
           record("Python/100", "unfixed", failure="a | b `c`",
                  agent_error={"type": "KeyError", "message": "'tests'"}),
           record("Python/1"), record("Python/7")]
    comparison = compare(now, baseline)
    summary = build(now, times_from_records([]), comparison)
    attach_gates(summary, gate_checks(summary, comparison, 0.0, 0.05, None, "warn",
                                      baseline.values(), now))
    return markdown(summary)


def test_the_summary_tells_the_baselines_figure_the_change_and_what_the_baseline_was():
    text = pull_request_summary()
    [line] = [line for line in text.splitlines() if line.startswith("**against the baseline")]
    # The baseline fixed 4 of these 5 tasks; this run fixes 2 of 5: 80% -> 40%, with 3
    # regressions and 1 improvement.
    assert line.startswith("**against the baseline: pass@1 80.0% [")
    assert "over the 5 paired task(s), change -40.0 points on them (exact McNemar one-sided " \
        "p=0.3125)" in line
    assert "baseline model qwen-coder, agent repair, run 20261127T101010-abcd1234, " \
        "computed by llama.cpp; b4000" in line


def test_regressions_and_improvements_are_in_task_id_order():
    lines = pull_request_summary().splitlines()
    assert "- regressions: Python/2, Python/10, Python/100" in lines
    assert "- improvements: Python/7" in lines


def test_unfixed_tasks_and_agent_errors_are_folded_with_one_line_each():
    text = pull_request_summary()
    unfixed = text[text.index("<details><summary>Not fixed: 2 task(s)</summary>"):]
    unfixed = unfixed[:unfixed.index("</details>")]
    assert unfixed.splitlines()[3:] == ["|---|---|", "| Python/2 | NameError: name 'x' is not "
                                        "defined |", "| Python/10 | AssertionError |", ""]
    raised = text[text.index("<details><summary>The agent raised on 1 task(s)"):]
    assert "| Python/100 | KeyError: 'tests' |" in raised[:raised.index("</details>")]
    # The agent errors are named by the gates too, and are no unfixed task.
    assert "the agent raised on 1 of 5 scored task(s), scored not fixed" in text
    assert "2 fixed of 5 scored (flagged: 0), 1 agent error(s)" in text
