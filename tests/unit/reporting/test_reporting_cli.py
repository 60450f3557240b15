"""`humanfix-report RESULTS.jsonl` (reporting/cli.py) over a run's results and its own
summary.json: the gates judge coverage as the run did, and the run's files stay as written."""

from __future__ import annotations

import json

import pytest
from reporting_records import record

from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.files import write_reports
from pytest_humanfix.reporting.summary import build, times_from_records

RAN = [record(f"Python/{n}", run_id="run-1") for n in range(3)]
NOT_RUN = {f"Python/{n}": "deselected (-k)" for n in range(3, 9)}


@pytest.fixture
def subset_run(tmp_path):
    """A `-k` run's folder: 3 of 9 selected tasks ran, all fixed, as the run wrote it."""
    folder = tmp_path / "reports"
    selection = {"selected": [*(r["task_id"] for r in RAN), *NOT_RUN], "not_run": NOT_RUN}
    write_reports(build(RAN, times_from_records(RAN), selection=selection), RAN, folder)
    (folder / "humanfix.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RAN),
                                           encoding="utf-8")
    return folder


def test_a_subset_fails_the_gates_as_it_did_in_its_run(subset_run, capsys):
    own = (subset_run / "summary.json").read_bytes()
    assert report_main([str(subset_run / "humanfix.jsonl"), "--fail-under", "0.5"]) == 1
    printed = capsys.readouterr().out
    assert ("humanfix gate FAILED: 6 of 9 selected task(s) did not run (6 deselected (-k)): "
            "gates judge complete runs only") in printed
    rendered = json.loads((subset_run / "humanfix-report" / "summary.json").read_text())
    assert rendered["coverage"]["not_run"] == 6 and rendered["gate_failed"]
    # The run's own summary is not rewritten.
    assert (subset_run / "summary.json").read_bytes() == own


def test_the_runs_own_folder_is_written_only_when_named(subset_run):
    results = str(subset_run / "humanfix.jsonl")
    assert report_main([results, "--out", str(subset_run)]) == 0
    # Replaced, with the run's coverage kept: rendering again reads the same selection.
    assert json.loads((subset_run / "summary.json").read_text())["coverage"]["not_run"] == 6
    assert report_main([results, "--out", str(subset_run), "--fail-under", "0.5"]) == 1


def test_tasks_run_since_the_summary_are_not_counted_missing(subset_run, capsys):
    # A resumed run that died before writing its summary: the later records ran after all.
    later = [*RAN, *(record(task, run_id="run-1") for task in NOT_RUN)]
    (subset_run / "humanfix.jsonl").write_text("".join(json.dumps(r) + "\n" for r in later),
                                               encoding="utf-8")
    assert report_main([str(subset_run / "humanfix.jsonl"), "--fail-under", "0.5"]) == 0
    assert "humanfix gates held: pass@1 1.0000 over 9 scored task(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("summary", "said"), [
    (None, "NOTE: no summary.json of the run beside its results"),
    ({"run": {"run_ids": ["run-0"]}, "coverage": {}}, "is of other runs than the results file"),
    ("not json", "is no run summary (JSONDecodeError"),
])
def test_without_the_runs_summary_the_report_says_the_selection_is_unknown(tmp_path, capsys,
                                                                          summary, said):
    (tmp_path / "humanfix.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RAN),
                                             encoding="utf-8")
    if summary is not None:
        text = summary if isinstance(summary, str) else json.dumps(summary)
        (tmp_path / "summary.json").write_text(text, encoding="utf-8")
    assert report_main([str(tmp_path / "humanfix.jsonl"), "--fail-under", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert said in printed
    assert "the selection is not known, so the gates take the 3 task(s) of the results file " \
           "for the whole of it" in printed
