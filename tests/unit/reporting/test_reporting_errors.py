"""An error can never raise a score: one set of records, a task in each way a task can end in an
error, read through every view of a run (terminal, summary.json and summary.md, JUnit, the page,
the live line, the gates, compare, merge and humanfix-report), each scoring it not fixed."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from reporting_records import record

from pytest_humanfix.jsonl import jsonl_bytes
from pytest_humanfix.reporting import compare as compare_mod
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.files import markdown
from pytest_humanfix.reporting.gates import compare, gate_checks
from pytest_humanfix.reporting.junit import junit_properties, write_junit
from pytest_humanfix.reporting.progress import progress_text
from pytest_humanfix.reporting.summary import build
from pytest_humanfix.reporting.terminal import summary_lines
from pytest_humanfix.reporting.view import page

DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)
SHARD = {"count": 2, "selection": "s", "selected": 5}
RUN = {"model": "m", "dataset_hash": "h", "protocol": {"agent": "repair", "iters": 0}}


def ended(task_id: str, outcome: str, index: int, **fields) -> dict:
    tasks = ["Python/0", "Python/2", "Python/4"] if index == 1 else ["Python/1", "Python/3"]
    return record(task_id, outcome, shard={**SHARD, "index": index, "tasks": tasks},
                  run_id=f"r{index}", **RUN, **fields)


# One fix, one failure, and a task in each kind of error: a harness fault, a harness fault its
# retry did not clear, an item timeout. Leaving the errors out would make pass@1 1/2.
RECORDS = [ended("Python/0", "fixed", 1), ended("Python/1", "unfixed", 2),
           ended("Python/2", "error", 1, error="SandboxError: the sandbox broke"),
           ended("Python/3", "error", 2, error="the xdist worker died",
                 first_try={"outcome": "error", "error": "the xdist worker died"}),
           ended("Python/4", "error", 1, item_timeout=True, error="item timeout fired")]
PASS_AT_1 = 1 / 5
# The baseline fixed every task: four regressions, the errors among them.
BASELINE = {r["task_id"]: {**r, "outcome": "fixed", "error": ""} for r in RECORDS}


def test_every_view_of_a_run_scores_its_errors_not_fixed(tmp_path: Path) -> None:
    summary = build(RECORDS, {"wall_seconds": 1.0})
    assert summary["pass_at_1"]["value"] == PASS_AT_1 and summary["pass_at_1"]["tasks"] == 5
    counts = summary["tasks"]
    assert (counts["scored"], counts["fixed"], counts["unfixed"], counts["errors"],
            counts["item_timeouts"], counts["retried"]) == (5, 1, 1, 2, 1, 1)
    assert summary["pass_at_k"]["1"] == PASS_AT_1
    assert summary["by_round"][-1]["value"] == PASS_AT_1
    assert [row["pass_at_1"]["value"] for row in summary["by_language"]] == [PASS_AT_1]
    assert summary["cost"]["fixed"] == 1
    lines = summary_lines(summary)
    assert "pass@1 = 20.0% (1/5) = 0.2000" in lines[2]
    assert "**pass@1 20.0% [" in markdown(summary)
    assert "1 fixed of 5 scored" in markdown(summary)
    properties = dict(junit_properties(summary))
    assert (properties["humanfix_pass_at_1"], properties["humanfix_scored"]) == ("0.2000", "5")
    suite = ET.parse(write_junit(summary, RECORDS, tmp_path / "junit.xml", gated=False)
                     ).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("3", "1")
    assert dict((p.get("name"), p.get("value")) for p in suite.iter("property")
                )["humanfix_pass_at_1"] == "0.2000"
    assert "pass@1 = 20.0% (1/5)" in page(summary, RECORDS)
    assert "fixed 1, pass@1 20.0% [" in progress_text(RECORDS, 5, elapsed=1.0)


def test_the_gates_count_an_error_against_the_run() -> None:
    summary = build(RECORDS, {"wall_seconds": 1.0}, compare(RECORDS, BASELINE))
    comparison = compare(RECORDS, BASELINE)
    assert comparison.regressions == ["Python/1", "Python/2", "Python/3", "Python/4"]
    assert comparison.unpaired == []
    checks = {check.name: check for check in gate_checks(
        summary, comparison, fail_under=0.25, alpha=0.05, max_regressions=1,
        computed_by_mismatch="warn", baseline=BASELINE.values(), records=RECORDS)}
    assert not checks["fail-under"].passed
    assert "pass@1 0.2000 over 5 scored task(s) is under" in checks["fail-under"].reason
    assert not checks["max-regressions"].passed
    assert summary["baseline"] is not None
    assert summary["baseline"]["change"] == pytest.approx(PASS_AT_1 - 1.0)
    # The page marks the same tasks as the gate.
    [data] = DATA.findall(page(summary, RECORDS, baseline=BASELINE))
    assert sorted(task["id"] for task in json.loads(data)["tasks"]
                  if task["flip"] == "regression") == comparison.regressions


def test_compare_merge_and_humanfix_report_score_the_errors_alike(tmp_path: Path, capsys) -> None:
    other = [{**r, "protocol": {"agent": "resample", "iters": 0}} for r in BASELINE.values()]
    compared = compare_mod.side_by_side(other, RECORDS)
    assert compared["tasks"] == 5 and compared["runs"][1]["curve"][-1]["fixed"] == 1
    assert compared["only_first"] == ["Python/1", "Python/2", "Python/3", "Python/4"]
    shards = []
    for index in (1, 2):
        path = tmp_path / f"shard-{index}.jsonl"
        path.write_bytes(jsonl_bytes([r for r in RECORDS if r["shard"]["index"] == index]))
        shards.append(str(path))
    merged = tmp_path / "merged"
    assert report_main(["merge", *shards, "--out", str(merged)]) == 0
    assert json.loads((merged / "summary.json").read_text())["pass_at_1"]["value"] == PASS_AT_1
    results = merged / "humanfix.jsonl"
    assert report_main([str(results), "--out", str(tmp_path / "report"),
                        "--fail-under", "0.25"]) == 1
    assert "pass@1 0.2000 over 5 scored task(s) is under" in capsys.readouterr().out
    rendered = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert rendered["pass_at_1"]["value"] == PASS_AT_1
