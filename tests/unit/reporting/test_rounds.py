"""pass@1 within k repair rounds (`summary.by_round`): counted from the records, ending at the
run's pass@1, and shown the same in the terminal, summary.json and summary.md, JUnit, the chart
and `humanfix-report rounds`."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.records import Outcome, TaskResult, graded_round
from pytest_humanfix.reporting.chart import write_chart
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.files import markdown
from pytest_humanfix.reporting.html_report import summary_html
from pytest_humanfix.reporting.junit import junit_properties
from pytest_humanfix.reporting.stats import wilson_interval
from pytest_humanfix.reporting.summary import build, by_round, rate, repairs
from pytest_humanfix.reporting.terminal import summary_lines
from pytest_humanfix.session.samples import combine_samples

SVG = "{http://www.w3.org/2000/svg}"


def fixed(task_id: str, at: int | None, **more) -> dict:
    return {"task_id": task_id, "bug_type": "x", "outcome": "fixed", "fixed_round": at, **more}


def unfixed(task_id: str, **more) -> dict:
    return {"task_id": task_id, "bug_type": "x", "outcome": "unfixed", "fixed_round": None,
            **more}


PROTOCOL = {"iters": 3, "samples": 1}


def mixed_records() -> list[dict]:
    """Fixed at rounds 0, 1 and 2 (none at 3), an unfixed task, a flagged fix scored unfixed
    (--humanfix-strict), a harness error (scored not fixed) and a known failure (not scored),
    both "fixed" at round 0 to show that neither fix counts, and a task of three samples fixed
    at rounds 0 and 2."""
    samples = [{"outcome": "fixed", "fixed_round": 0}, {"outcome": "fixed", "fixed_round": 2},
               {"outcome": "unfixed", "fixed_round": None}]
    rows = [fixed("a", 0), fixed("b", 1), fixed("c", 2), unfixed("d"),
            unfixed("e", flags=["always-equal: ..."],
                    failure="flagged, scored not fixed (--humanfix-strict): always-equal"),
            {**fixed("f", 0), "outcome": "error", "error": "boom"},
            fixed("g", 0, known_failure="the toolchain cannot run it"),
            fixed("h", 0, n=3, n_fixed=2, samples=samples)]
    return [{**row, "protocol": PROTOCOL} for row in rows]


def test_by_round_counts_the_fixes_made_within_each_round_and_ends_at_pass_at_1():
    records = mixed_records()
    summary = build(records, {})
    rows = summary["by_round"]
    # Seven scored tasks: a, b, c, d, e, f (the error, not fixed) and h (the mean of its
    # samples, 1/3 then 2/3).
    expected = [(0, 2, (1 + 1 / 3) / 7), (1, 3, (2 + 1 / 3) / 7), (2, 5, (3 + 2 / 3) / 7),
                (3, 5, (3 + 2 / 3) / 7)]
    assert [(r["round"], r["fixed"]) for r in rows] == [(k, f) for k, f, _ in expected]
    for row, (_, _, value) in zip(rows, expected, strict=True):
        assert row["value"] == pytest.approx(value)
        assert row["tasks"] == 7
        assert row["ci95"] == pytest.approx(list(wilson_interval(value * 7, 7)))
    assert rows[-1] == {"round": 3, "fixed": 5, **summary["pass_at_1"]}
    assert rows == by_round(records)  # what `humanfix-report rounds` draws

    properties = dict(junit_properties(summary))
    assert [properties[f"humanfix_pass_at_1_round_{k}"] for k in range(4)] == \
        [f"{v:.4f}" for _, _, v in expected]
    assert properties["humanfix_pass_at_1_round_3"] == properties["humanfix_pass_at_1"]
    lines = summary_lines(summary)
    assert "pass@1 by round: r0 19.0% \u00b7 r1 33.3% \u00b7 r2 52.4% \u00b7 r3 52.4%" in lines
    # These hand-made records say nothing of what computed them, and the summary says so.
    assert lines[1] == "computed by: not recorded"
    assert lines[2].startswith("pass@1 = 52.4% ")
    text = markdown(summary)
    assert "| round | fixed | pass@1 [95% CI] |" in text
    assert re.search(r"^\| 0 \| 2 \| 19\.0% \[", text, re.M)
    assert re.search(r"^\| 3 \| 5 \| 52\.4% \[", text, re.M)
    assert "**pass@1 52.4% [" in text
    assert "<p>pass@1 by round: r0 19.0% \u00b7 r1 33.3%" in summary_html(summary)[0]


def test_a_run_without_repair_rounds_shows_no_curve(tmp_path):
    records = [{**r, "protocol": {"iters": 0}} for r in (fixed("a", 0), unfixed("b"))]
    summary = build(records, {})
    assert summary["by_round"] == [{"round": 0, "fixed": 1, **summary["pass_at_1"]}]
    assert not any(name.startswith("humanfix_pass_at_1_round")
                   for name, _ in junit_properties(summary))
    assert not any(line.startswith("pass@1 by round") for line in summary_lines(summary))
    assert "| round |" not in markdown(summary)
    write_chart(summary, records, tmp_path / "summary.svg")
    assert curves(tmp_path / "summary.svg") == {}


def test_records_written_before_rounds_were_kept_still_summarise():
    def attempt(**more) -> dict:
        return {"code": "", "diff": "", "verdict": None, **more}

    def old(task_id: str, outcome: str, **more) -> dict:
        return {"task_id": task_id, "entry_point": "f", "bug_type": "x", "outcome": outcome,
                **more}

    # No fixed_round anywhere: it comes from the graded attempt, its round or else its index.
    by_index = old("a", "fixed", final_attempt=1, attempts=[attempt(), attempt()])
    # Three replies in two rounds: the repeat of the first was asked again in round 1.
    by_round_field = old("b", "fixed", final_attempt=2,
                         attempts=[attempt(round=0), attempt(round=1), attempt(round=1)])
    # Neither the round nor the attempts: a fix of unknown round, counted at the last round.
    bare = old("c", "fixed")
    # Samples without their rounds: the first one is the record's own (its attempts tell).
    samples = old("d", "fixed", final_attempt=0, attempts=[attempt()], n=2, n_fixed=2,
                  samples=[{"outcome": "fixed"}, {"outcome": "fixed"}])
    nothing = old("e", "unfixed", final_attempt=0, attempts=[attempt()])
    records = [by_index, by_round_field, bare, samples, nothing]
    assert [graded_round(r) for r in records] == [1, 1, None, 0, None]
    assert [TaskResult.from_record(r).fixed_round for r in records] == [1, 1, None, 0, None]
    summary = build(records, {})  # no protocol: the rounds are the latest round of a fix
    assert [(r["round"], r["fixed"]) for r in summary["by_round"]] == [(0, 1), (1, 5)]
    assert summary["by_round"][0]["value"] == pytest.approx(0.5 / 5)
    assert summary["by_round"][-1]["value"] == summary["pass_at_1"]["value"] == 0.8


def test_a_fix_recorded_past_the_protocols_rounds_still_ends_the_curve_at_pass_at_1():
    records = [fixed("a", 0, protocol={"iters": 1}), fixed("b", 3, protocol={"iters": 1})]
    rows = by_round(records)
    assert [r["round"] for r in rows] == [0, 1, 2, 3]
    assert rows[-1]["value"] == rate(records)["value"] == 1.0


def test_samples_carry_their_own_fixed_round(dataset):
    task = load_tasks(str(dataset))[0]

    def result(outcome: Outcome, at: int | None) -> TaskResult:
        return TaskResult(task_id=task.task_id, entry_point=task.entry_point,
                          bug_type=task.bug_type, outcome=outcome, final_attempt=at,
                          fixed_round=at)

    combined = combine_samples([result("fixed", 1), result("fixed", 0), result("unfixed", None)])
    assert (combined.final_attempt, combined.fixed_round) == (1, 1)
    assert [s.fixed_round for s in combined.samples] == [1, 0, None]
    record = json.loads(json.dumps(combined.to_dict()))
    assert [(r["round"], r["fixed"]) for r in by_round([record])] == [(0, 1), (1, 2)]


def curves(path: Path) -> dict[str, list[dict]]:
    """The curves a chart draws, by label: each point's figures, read from its marks, and
    checked against where it is drawn (the line passes through the points, higher is more)."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    found = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "curve":
            continue
        points = [circle for circle in group.iter(f"{SVG}circle")
                  if circle.get("class") == "point"]
        line = next(p for p in group.iter(f"{SVG}path") if p.get("class") == "line")
        drawn = [tuple(float(n) for n in pair.split())
                 for pair in line.get("d", "").removeprefix("M").split(" L")]
        assert drawn == [(float(c.get("cx", "")), float(c.get("cy", ""))) for c in points]
        marks = [(float(c.get("data-value", "")), float(c.get("cy", ""))) for c in points]
        for (v1, h1), (v2, h2) in itertools.pairwise(marks):
            assert (v1 < v2) == (h1 > h2) and (v1 == v2) == (h1 == h2)
        found[group.get("data-label", "")] = [
            {"round": int(c.get("data-round", "")), "value": float(c.get("data-value", "")),
             "fixed": int(c.get("data-fixed", ""))} for c in points]
    return found


def drawn(rows: list[dict]) -> list[dict]:
    """The figures of `by_round` rows as a chart shows them (six decimals)."""
    return [{"round": r["round"], "value": pytest.approx(r["value"], abs=1e-6),
             "fixed": r["fixed"]} for r in rows]


def test_the_chart_draws_the_curve(tmp_path):
    records = mixed_records()
    summary = build(records, {"model": "m<1>"})
    path = write_chart(summary, records, tmp_path / "summary.svg")
    assert curves(path) == {"m<1>": drawn(summary["by_round"])}


def wrong(code: str, number: int) -> str:
    """Wrong code unlike any other reply (so never a repeat of an earlier attempt)."""
    return code + f"    _attempt = {number}\n"


def replay_file(path: Path, dataset: Path, plan: dict[str, str]) -> Path:
    """Per task, one reply per letter of the plan, in order: c canonical, w wrong."""
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    lines = []
    for task_id, letters in plan.items():
        for number, letter in enumerate(letters):
            task = tasks[task_id]
            code = task.canonical_code if letter == "c" else wrong(task.buggy_code, number)
            lines.append(json.dumps({"task_id": task_id, "completion": f"```python\n{code}```"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def junit_properties_of(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.get("name", ""): p.get("value", "") for p in root.iter("property")}


def test_a_run_with_repair_rounds_reports_pass_at_1_by_round(humanfix_pytester, dataset,
                                                             tmp_path, read_records, capsys):
    # Fixed at round 0, 1 and 2, and not fixed within the two rounds.
    replay = replay_file(tmp_path / "replay.jsonl", dataset, {
        "Python/0": "c", "Python/1": "wc", "Python/2": "wwc", "Python/3": "www"})
    result = humanfix_pytester.runpytest(
        "-p", "no:cacheprovider", f"--humanfix-model=replay:{replay}", "--humanfix-max", "4",
        "--humanfix-iters", "2")
    result.assert_outcomes(passed=3, failed=1)
    records = read_records()
    assert [r["fixed_round"] for r in records] == [0, 1, 2, None]
    assert [len(r["attempts"]) for r in records] == [1, 2, 3, 3]

    reports = humanfix_pytester.path / "reports"
    summary = json.loads((reports / "summary.json").read_text())
    rows = summary["by_round"]
    assert [(r["round"], r["fixed"], r["value"]) for r in rows] == \
        [(0, 1, 0.25), (1, 2, 0.5), (2, 3, 0.75)]
    assert rows[-1]["value"] == summary["pass_at_1"]["value"]
    assert rows[-1]["ci95"] == summary["pass_at_1"]["ci95"]
    result.stdout.fnmatch_lines(["pass@1 = 75.0% (3/4) = 0.7500*",
                                 "pass@1 by round: r0 25.0% \u00b7 r1 50.0% \u00b7 r2 75.0%"])
    properties = junit_properties_of(reports / "junit.xml")
    assert [properties[f"humanfix_pass_at_1_round_{k}"] for k in range(3)] == \
        ["0.2500", "0.5000", "0.7500"]
    assert properties["humanfix_pass_at_1"] == "0.7500"
    assert "humanfix_pass_at_1_round_3" not in properties
    text = (reports / "summary.md").read_text()
    assert "**pass@1 75.0% [" in text and re.search(r"^\| 2 \| 3 \| 75\.0% \[", text, re.M)
    assert curves(reports / "summary.svg") == {"replay:" + str(replay): drawn(rows)}

    # humanfix-report rebuilds the same figures, and draws this run beside the canonical one.
    rebuilt = tmp_path / "rebuilt"
    assert report_main([str(reports / "humanfix.jsonl"), "--out", str(rebuilt)]) == 0
    assert json.loads((rebuilt / "summary.json").read_text())["by_round"] == rows
    humanfix_pytester.runpytest(
        "-p", "no:cacheprovider", "--humanfix-model=canonical", "--humanfix-max", "4",
        "--humanfix-iters", "2", "--humanfix-jsonl", "canonical.jsonl").assert_outcomes(passed=4)
    capsys.readouterr()
    chart = tmp_path / "charts" / "rounds.svg"
    assert report_main(["rounds", str(reports / "humanfix.jsonl"),
                        str(humanfix_pytester.path / "canonical.jsonl"), "-o", str(chart)]) == 0
    printed = capsys.readouterr().out.splitlines()
    canonical = [{"round": k, "value": 1.0, "fixed": 4} for k in range(3)]
    assert curves(chart) == {"replay:" + str(replay): drawn(rows), "canonical": canonical}
    assert printed == [
        f"replay:{replay}: pass@1 by round: r0 25.0% \u00b7 r1 50.0% \u00b7 r2 75.0% "
        "(over 4 scored task(s))",
        "canonical: pass@1 by round: r0 100.0% \u00b7 r1 100.0% \u00b7 r2 100.0% "
        "(over 4 scored task(s))",
        f"wrote {chart}"]


def test_samples_of_a_run_each_count_in_the_round_that_fixed_them(humanfix_pytester, dataset,
                                                                  tmp_path, read_records):
    # Python/0: sample 1 fixed at round 0, sample 2 at round 1. Python/1: sample 1 not fixed in
    # its two replies, sample 2 fixed at round 0.
    replay = replay_file(tmp_path / "replay.jsonl", dataset,
                         {"Python/0": "cwc", "Python/1": "wwc"})
    result = humanfix_pytester.runpytest(
        "-p", "no:cacheprovider", f"--humanfix-model=replay:{replay}", "--humanfix-max", "2",
        "--humanfix-iters", "1", "--humanfix-samples", "2", "--humanfix-temperature", "0.5")
    result.assert_outcomes(passed=1, failed=1)
    records = read_records()
    assert [[s["fixed_round"] for s in r["samples"]] for r in records] == [[0, 1], [None, 0]]
    assert [r["fixed_round"] for r in records] == [0, None]
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert [(r["round"], r["fixed"], r["value"]) for r in summary["by_round"]] == \
        [(0, 2, 0.5), (1, 3, 0.75)]
    assert summary["pass_at_1"]["value"] == 0.75
    result.stdout.fnmatch_lines(["pass@1 by round: r0 50.0% \u00b7 r1 75.0%"])


def test_rounds_report_tells_runs_apart_and_warns_when_they_differ(tmp_path, capsys):
    first = tmp_path / "a.jsonl"
    second = tmp_path / "b.jsonl"
    base = {"model": "m", "protocol": {"iters": 1}, "dataset_hash": "h"}
    first.write_text(json.dumps({**fixed("t1", 1), **base}) + "\n"
                     + json.dumps({**unfixed("t2"), **base}) + "\n")
    second.write_text(json.dumps({**fixed("t1", 0), **base, "protocol": {"iters": 2}}) + "\n")
    chart = tmp_path / "rounds.svg"
    assert report_main(["rounds", str(first), str(second), "-o", str(chart)]) == 0
    printed = capsys.readouterr().out
    assert set(curves(chart)) == {"m (a.jsonl)", "m (b.jsonl)"}
    assert f"WARNING: {second} was run otherwise than {first}: python iters: 2 there, 1 here" \
        in printed
    assert f"WARNING: {second} scores other tasks than {first}" in printed
    assert report_main(["rounds", str(tmp_path / "missing.jsonl"), "-o", str(chart)]) == 2
    assert "missing.jsonl is not a file" in capsys.readouterr().err


def test_repairs_count_repeated_replies_and_rounds_that_ended_on_one():
    """The repeat rate of the repair rounds (issue 20's goal: at most 20%) counts every reply of
    rounds 1 and after, asks again included; a round wasted is one whose last reply repeated
    failed code all the same. Old records without rounds count one round per reply."""
    def attempt(status, round_=None):
        return {"status": status, "round": round_}

    records = [
        {"task_id": "A", "outcome": "fixed", "protocol": {"iters": 2}, "attempts": [
            attempt("failed", 0), attempt("repeat", 1), attempt("repeat", 1),
            attempt("failed", 1), attempt("passed", 2)]},
        {"task_id": "B", "outcome": "unfixed", "protocol": {"iters": 2}, "attempts": [
            attempt("failed", 0), attempt("repeat", 1)]},
        {"task_id": "C", "outcome": "unfixed", "protocol": {"iters": 2}, "attempts": [
            attempt("failed"), attempt("repeat"), attempt("failed")]},
    ]
    assert repairs(records) == {
        "replies": 7, "repeated": 4, "repeat_rate": 4 / 7,
        "rounds": 5, "wasted_rounds": 2, "wasted_rate": 2 / 5}
    assert repairs([{**records[0], "protocol": {"iters": 0},
                             "attempts": [attempt("passed", 0)]}]) is None
    built = build([{**r, "bug_type": "value misuse"} for r in records], {})
    assert built["repairs"]["repeated"] == 4
    assert ("humanfix_repair_wasted_rounds", "2") in junit_properties(built)
