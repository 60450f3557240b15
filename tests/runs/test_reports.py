"""summary.json, summary.md, summary.svg, $GITHUB_STEP_SUMMARY, --humanfix-samples with pass@k,
and `humanfix-report` rebuilding the same summary from a JSONL."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.reporting.chart import write_chart
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.stats import wilson_interval
from pytest_humanfix.reporting.summary import build

SVG = "{http://www.w3.org/2000/svg}"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def load_summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def chart_facts(path: Path) -> dict:
    """What summary.svg shows, read from its marks: it must parse as SVG."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    groups = list(root.iter(f"{SVG}g"))
    bins = {kind: [int(rect.get("data-count", "")) for group in groups
                   if group.get("class") == f"panel {kind}"
                   for rect in group.iter(f"{SVG}rect") if rect.get("class") == "bin"]
            for kind in ("seconds", "tokens")}
    return {
        "bars": {group.get("data-bug-type"): float(group.get("data-value", ""))
                 for group in groups if group.get("class") == "bar"},
        "texts": ["".join(text.itertext()) for text in root.iter(f"{SVG}text")],
        "legend": [text.text for text in root.iter(f"{SVG}text")
                   if text.get("class") == "overall-label"],
        "seconds": bins["seconds"], "tokens": bins["tokens"],
    }


def test_summary_files_of_a_run(humanfix_pytester, dataset, monkeypatch, tmp_path, read_records):
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = run(humanfix_pytester, "--humanfix-model", "canonical", "--humanfix-max", "6")
    result.assert_outcomes(passed=6)
    reports = humanfix_pytester.path / "reports"
    summary = load_summary(reports)
    tasks = load_tasks(str(dataset))[:6]

    assert summary["run"]["model"] == "canonical"
    assert summary["run"]["protocol"]["samples"] == 1
    assert summary["run"]["versions"]["python"] == platform.python_version()
    assert set(summary["run"]["versions"]) >= {"pytest-humanfix", "torch", "transformers"}
    assert summary["run"]["wall_seconds"] >= 0
    assert summary["run"]["started_at"] <= summary["run"]["ended_at"]
    assert summary["tasks"] == {"total": 6, "scored": 6, "errors": 0, "item_timeouts": 0,
                                "retried": 0, "fixed": 6, "unfixed": 0, "agent_errors": 0,
                                "flagged": 0, "known_failures": 0}
    assert summary["flagged"] == []
    assert summary["pass_at_1"]["value"] == 1.0
    assert summary["pass_at_1"]["ci95"] == pytest.approx(list(wilson_interval(6, 6)))
    assert summary["pass_at_k"] == {"1": 1.0}
    by_type = {row["bug_type"]: row for row in summary["by_bug_type"]}
    expected_types = {t.bug_type for t in tasks}
    assert set(by_type) == expected_types
    assert sum(row["scored"] for row in by_type.values()) == 6
    records = read_records()
    assert summary["seconds"]["total"] == pytest.approx(sum(r["seconds"] for r in records))
    assert summary["slowest"][0]["seconds"] == max(r["seconds"] for r in records)
    assert summary["errors"] == [] and summary["gates"] == [] and summary["baseline"] is None

    markdown = (reports / "summary.md").read_text()
    assert markdown.startswith("## HumanEvalFix: `canonical`")
    assert "**pass@1 100.0% [" in markdown
    assert "| bug type | fixed | scored | errors | pass@1 [95% CI] |" in markdown
    for bug_type, row in by_type.items():
        assert f"| {bug_type} | {row['fixed']} | {row['scored']} | 0 |" in markdown
    assert step_summary.read_text() == "earlier step\n" + markdown

    chart = chart_facts(reports / "summary.svg")
    assert chart["bars"] == {row["bug_type"]: pytest.approx(row["pass_at_1"]["value"])
                             for row in summary["by_bug_type"]}
    for row in summary["by_bug_type"]:
        assert f"{row['bug_type']} (n={row['scored']})" in chart["texts"]
    assert "pass@1 per bug type: canonical" in chart["texts"]
    assert chart["legend"] == [f"all tasks {summary['pass_at_1']['value']:.1%}"]
    assert len(chart["seconds"]) == len(chart["tokens"]) == 20
    assert sum(chart["seconds"]) == sum(chart["tokens"]) == len(records)
    assert not list(reports.glob("*.partial.svg"))

    result.stdout.fnmatch_lines([
        "pass@1 100.0% [[]*%, 100.0%[]] (95% Wilson interval over 6 tasks)",
        "tokens: 0 (0 prompt, 0 completion), 0 per task; seconds: *",
        "slowest: Python/*",
        "wrote reports/summary.svg",
    ])


def replay_lines(dataset: Path, plan: dict[str, str]) -> str:
    """A replay file: per task, one reply per letter of the plan, c canonical, b buggy."""
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    lines = []
    for task_id, letters in plan.items():
        for letter in letters:
            code = tasks[task_id].canonical_code if letter == "c" else tasks[task_id].buggy_code
            lines.append(json.dumps({"task_id": task_id, "completion": f"```python\n{code}```"}))
    return "\n".join(lines) + "\n"


def test_samples_give_unbiased_pass_at_k(humanfix_pytester, dataset, tmp_path, read_records):
    replay = tmp_path / "replay.jsonl"
    replay.write_text(replay_lines(dataset, {"Python/0": "cbc", "Python/1": "bbc"}))
    result = run(humanfix_pytester, f"--humanfix-model=replay:{replay}", "--humanfix-max", "2",
                 "--humanfix-samples", "3", "--humanfix-temperature", "0.8")
    # The first sample decides the item: Python/0 fixed, Python/1 not.
    result.assert_outcomes(passed=1, failed=1)
    assert "samples are identical" not in result.stdout.str()
    summary = load_summary(humanfix_pytester.path / "reports")
    assert summary["samples"] == 3
    # Python/0: n=3, c=2; Python/1: n=3, c=1.
    assert summary["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert summary["pass_at_k"]["2"] == pytest.approx((1 + (1 - 1 / 3)) / 2)
    assert summary["pass_at_k"]["3"] == pytest.approx(1.0)
    assert summary["pass_at_1"]["value"] == pytest.approx(0.5)
    records = read_records()
    assert [(r["n"], r["n_fixed"]) for r in records] == [(3, 2), (3, 1)]
    assert [s["outcome"] for s in records[0]["samples"]] == ["fixed", "unfixed", "fixed"]
    result.stdout.fnmatch_lines(["pass@1 = 50.0%  pass@2 = 83.3%  pass@3 = 100.0%"])


def test_samples_at_temperature_zero_warn(humanfix_pytester):
    result = run(humanfix_pytester, "--humanfix-model", "canonical", "--humanfix-max", "1",
                 "--humanfix-samples", "2")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*--humanfix-samples 2 at temperature 0: greedy decoding makes "
                                 "the samples identical*"])


def test_humanfix_report_rebuilds_the_run_summary(humanfix_pytester, tmp_path, capsys):
    run(humanfix_pytester, "--humanfix-model", "buggy", "--humanfix-max", "5").assert_outcomes(
        failed=5)
    reports = humanfix_pytester.path / "reports"
    from_run = load_summary(reports)
    out = tmp_path / "rebuilt"
    assert report_main([str(reports / "humanfix.jsonl"), "--out", str(out)]) == 0
    rebuilt = load_summary(out)
    for key in ("tasks", "pass_at_1", "pass_at_k", "by_bug_type", "tokens", "seconds", "errors"):
        assert rebuilt[key] == from_run[key], key
    assert rebuilt["run"]["model"] == "buggy"
    assert (out / "summary.md").read_text().startswith("## HumanEvalFix: `buggy`")
    assert sum(chart_facts(out / "summary.svg")["seconds"]) == 5
    printed = capsys.readouterr().out
    assert "pass@1 = 0.0% (0/5)" in printed and "pass@1 0.0% [0.0%, 43.4%]" in printed
    # A chart that cannot be written is a warning; the summary files stand.
    (out / "summary.svg").unlink()
    (out / "summary.svg").mkdir()
    assert report_main([str(reports / "humanfix.jsonl"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out / 'summary.md'}" in printed
    assert f"WARNING: humanfix could not draw {out / 'summary.svg'}: IsADirectoryError" \
        in printed
    assert f"wrote {out / 'summary.svg'}" not in printed


def test_the_chart_escapes_its_text_and_survives_edge_cases(tmp_path):
    records = [{"task_id": "a", "bug_type": "x <&> \"y\"", "outcome": "fixed", "seconds": 1.5,
                "tokens": {"prompt": 9, "completion": 3}},
               {"task_id": "b", "bug_type": "plain", "outcome": "unfixed", "seconds": 0.5},
               {"task_id": "c", "bug_type": "plain", "outcome": "fixed", "seconds": 0.0,
                "tokens": {}}]
    summary = build(records, {"model": "m<1> & 'q'"})
    path = tmp_path / "summary.svg"
    assert write_chart(summary, records, path) == path
    assert [p.name for p in tmp_path.iterdir()] == ["summary.svg"]  # no partial file left
    assert "x &lt;&amp;&gt;" in path.read_text()
    chart = chart_facts(path)
    assert chart["bars"] == {"x <&> \"y\"": 1.0, "plain": 0.5}
    assert {"x <&> \"y\" (n=1)", "plain (n=2)", "pass@1 per bug type: m<1> & 'q'",
            "all tasks 66.7%"} <= set(chart["texts"])
    assert sum(chart["seconds"]) == sum(chart["tokens"]) == 3
    # Nothing to draw, or nothing to spread over an axis: still a whole chart, with no NaN.
    for some in ([], records[2:], [{**r, "seconds": 0, "tokens": None} for r in records]):
        write_chart(build(some, {}), some, path)
        chart = chart_facts(path)
        assert sum(chart["seconds"]) == len(some)
        assert "nan" not in path.read_text().lower()
    # Token totals a hair apart (no whole-number tick fits) or adding up past a float's range.
    odd = [{**records[0], "tokens": {"prompt": 100}}, {**records[1], "tokens": {"prompt": 100.01}},
           {**records[2], "tokens": {"prompt": 1e308, "completion": 1e308}}]
    write_chart(build(records, {}), odd, path)  # the chart reads the tokens off the records
    assert sum(chart_facts(path)["tokens"]) == 3
    assert "nan" not in path.read_text().lower() and "inf" not in path.read_text().lower()


def test_humanfix_report_compares_with_a_baseline(humanfix_pytester, tmp_path):
    args = ("--humanfix-max", "5", "--humanfix-jsonl")
    run(humanfix_pytester, "--humanfix-model", "canonical", *args, "good.jsonl")
    run(humanfix_pytester, "--humanfix-model", "buggy", *args, "bad.jsonl")
    good, bad = humanfix_pytester.path / "good.jsonl", humanfix_pytester.path / "bad.jsonl"
    process = subprocess.run(
        [sys.executable, "-m", "pytest_humanfix.reporting.cli", str(bad), "--baseline", str(good),
         "--out", str(tmp_path)], capture_output=True, text=True)
    # 5 regressions, 0 improvements: p = 1/32 < 0.05.
    assert process.returncode == 1, process.stderr
    assert process.stdout.splitlines()[-1] == (
        "humanfix gate FAILED: 5 regression(s), 0 improvement(s) against the baseline: exact "
        "McNemar one-sided p=0.03125 < alpha 0.05")
    summary = load_summary(tmp_path)
    assert summary["baseline"]["regressions"] == [f"Python/{n}" for n in range(5)]
    assert summary["gate_failed"] is True
    # The other way round it is five improvements: no drop, the gate holds.
    assert report_main([str(good), "--baseline", str(bad), "--out", str(tmp_path)]) == 0


def test_humanfix_report_reads_results_without_a_prompt_kind_as_auto(humanfix_pytester, tmp_path,
                                                                    capsys):
    args = ("--humanfix-model", "canonical", "--humanfix-max", "2", "--humanfix-jsonl")
    run(humanfix_pytester, *args, "auto.jsonl")
    run(humanfix_pytester, *args, "completion.jsonl", "--humanfix-prompt=completion")
    made = humanfix_pytester.path / "auto.jsonl"
    older = tmp_path / "older.jsonl"
    records = [json.loads(line) for line in made.read_text().splitlines()]
    for record in records:
        del record["protocol"]["prompt"]
    older.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert report_main([str(older), "--baseline", str(made), "--out", str(tmp_path)]) == 0
    completion = humanfix_pytester.path / "completion.jsonl"
    assert report_main([str(older), "--baseline", str(completion), "--out", str(tmp_path)]) == 2
    assert "prompt: 'completion' there, 'auto' here" in capsys.readouterr().err


def test_humanfix_report_refuses_bad_input(tmp_path, capsys):
    assert report_main([str(tmp_path / "missing.jsonl")]) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert report_main([str(empty)]) == 2
    assert "holds no result records" in capsys.readouterr().err
