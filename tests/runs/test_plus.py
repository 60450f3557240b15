"""HumanEvalFix+ (--humanfix-tests plus): the final candidate graded on HumanEval+ as well, both
verdicts kept, pass@1 beside pass@1+ and the weak-test fixes in every view; the usage errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.reporting.html_report import summary_html


# Right on greatest_common_divisor's four asserted inputs, wrong on most others.
WEAK_GCD = ("def greatest_common_divisor(a: int, b: int) -> int:\n"
            "    return {(3, 7): 1, (10, 15): 5, (49, 14): 7, (144, 60): 12}.get((a, b), 1)\n")


# Right on every input, but HumanEval+'s fifth, (100, 50), takes it ~20 s of CPU.
SLOW_GCD = ("def greatest_common_divisor(a: int, b: int) -> int:\n"
            "    if (a, b) == (100, 50):\n"
            "        for _ in range(10 ** 9):\n"
            "            pass\n"
            "    while b:\n"
            "        a, b = b, a % b\n"
            "    return a\n")


def replay(dataset: Path, path: Path, gcd: str = WEAK_GCD) -> Path:
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    canonical = tasks["Python/0"].canonical_code
    rows = [{"task_id": "Python/0", "completion": f"```python\n{canonical}```"},
            {"task_id": "Python/13", "completion": f"```python\n{gcd}```"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def plus_run(pytester: pytest.Pytester, dataset: Path, *args: str, gcd: str = WEAK_GCD
             ) -> pytest.RunResult:
    model = replay(dataset, pytester.path / "replay.jsonl", gcd)
    return pytester.runpytest(f"--humanfix-model=replay:{model}", "--humanfix-task",
                              "Python/0,Python/13", "--humanfix-tests", "plus", *args)


def test_weak_test_fix_passes_hidden_and_fails_plus(humanfix_pytester, dataset, read_records):
    result = plus_run(humanfix_pytester, dataset)
    result.assert_outcomes(passed=2)  # the items follow the hidden tests, as published figures do
    records = {r["task_id"]: r for r in read_records()}
    both, weak = records["Python/0"], records["Python/13"]
    assert both["outcome"] == "fixed" and both["plus_outcome"] == "fixed"
    assert both["plus_verdict"]["status"] == "passed"
    assert weak["outcome"] == "fixed" and weak["plus_outcome"] == "unfixed"
    assert weak["plus_verdict"]["status"] == "failed"
    assert weak["plus_failure"].startswith("HumanEval+ input ")
    assert "greatest_common_divisor(" in weak["plus_failure"]
    assert both["protocol"]["tests"] == "plus"
    assert both["plus_time_limit"]["reference_seconds"] is not None
    # EvalPlus's limits: each input max(4 s, 4 x the reference's CPU time on it), measured here.
    inputs = both["plus_time_limit"]["inputs"]
    assert (inputs["clock"], inputs["floor"], inputs["factor"]) == ("cpu", 4.0, 4.0)
    assert inputs["longest"] == pytest.approx(max(4.0, 4 * inputs["reference_longest"]))

    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    plus = summary["plus"]
    assert plus["pass_at_1"]["value"] == 1.0
    assert plus["pass_at_1_plus"] == {**plus["pass_at_1_plus"], "value": 0.5, "tasks": 2}
    assert plus["fixed_plus"] == 1
    assert [row["task_id"] for row in plus["weak_test_fixes"]] == ["Python/13"]
    result.stdout.fnmatch_lines([
        "HumanEval+: pass@1 100.0% * on the hidden tests, pass@1+ 50.0% * (1/2 fixed on "
        "HumanEval+ too)",
        "weak-test fixes (pass the hidden tests, fail HumanEval+): 1",
        "  Python/13: HumanEval+ input *"])
    markdown = (humanfix_pytester.path / "reports" / "summary.md").read_text()
    assert "pass@1+ 50.0%" in markdown and "weak-test fixes" in markdown
    suite = ET.parse(humanfix_pytester.path / "reports" / "junit.xml").getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["humanfix_pass_at_1"] == "1.0000"
    assert properties["humanfix_pass_at_1_plus"] == "0.5000"
    assert properties["humanfix_weak_test_fixes"] == "1"
    html = "".join(summary_html(summary))
    assert "pass@1+ 50.0%" in html and "Python/13" in html


def test_an_input_past_its_own_limit_times_the_candidate_out(humanfix_pytester, dataset,
                                                             read_records):
    """A candidate right on every input but too slow on one is stopped on that input by its own
    limit, long before the whole program's, and again when re-run: a timeout on
    HumanEval+ that names the input, while the hidden tests pass."""
    plus_run(humanfix_pytester, dataset, gcd=SLOW_GCD).assert_outcomes(passed=2)
    slow = {r["task_id"]: r for r in read_records()}["Python/13"]
    assert slow["outcome"] == "fixed" and slow["plus_outcome"] == "unfixed"
    verdict, limits = slow["plus_verdict"], slow["plus_time_limit"]
    assert verdict["status"] == "timeout" and verdict["rerun"]
    assert slow["plus_failure"] == (
        "HumanEval+ input 5 of 990: greatest_common_divisor(100, 50) ran past its limit, 4 s "
        "of CPU; re-run, it ran past it again")
    assert limits["inputs"]["longest"] == 4.0 and limits["seconds"] >= 60
    assert verdict["seconds"] < limits["seconds"] / 2


def test_resume_keeps_both_verdicts(humanfix_pytester, dataset, read_records):
    plus_run(humanfix_pytester, dataset).assert_outcomes(passed=2)
    result = plus_run(humanfix_pytester, dataset, "--humanfix-resume")
    records = {r["task_id"]: r for r in read_records()}
    assert records["Python/13"]["plus_outcome"] == "unfixed"
    assert records["Python/0"]["plus_outcome"] == "fixed"
    result.stdout.fnmatch_lines(["HumanEval+: pass@1 100.0% *, pass@1+ 50.0% *"])


def test_a_run_without_plus_keeps_its_records_and_fingerprint(humanfix_pytester, read_records):
    humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "1")
    record = read_records()[0]
    assert "tests" not in record["protocol"] and "plus_outcome" not in record


@pytest.mark.parametrize(("args", "message"), [
    (("--humanfix-language", "js", "--humanfix-dataset", "{dataset}"),
     "*--humanfix-tests plus grades Python only*"),
    (("--humanfix-plus-dataset", "{native}"), "*EvalPlus's native form*"),
    (("--humanfix-plus-dataset", "{renamed}"), "*Python/0's entry point is 'renamed'*"),
    (("--humanfix-plus-dataset", "{missing}"), "*--humanfix-plus-dataset *missing.jsonl.gz: "
     "no such file*"),
])
def test_usage_errors(humanfix_pytester, dataset, plus_rows, tmp_path, args, message):
    renamed = tmp_path / "renamed.jsonl"
    rows = [{**plus_rows[0], "entry_point": "renamed"}, *plus_rows[1:]]
    renamed.write_text("".join(json.dumps(row) + "\n" for row in rows))
    # EvalPlus's native form: its inputs, without OriginFmt's outputs.
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps({**row, "plus_input": []}) + "\n"
                              for row in plus_rows))
    paths = {"dataset": str(dataset).replace("python", "js"), "native": str(native),
             "renamed": str(renamed), "missing": str(tmp_path / "missing.jsonl.gz")}
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-tests", "plus",
        *(arg.format(**paths) for arg in args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# Canonical solutions whose HumanEval+ verdict depends on the machine's speed and load: one input
# of each takes about its limit, 4 s of CPU (Python/31 ~3.4 s, Python/39 ~8 s on a quiet 2-core
# machine, twice that beside a busy one). Every other canonical solution is 3x or more within its
# input limits or past them (docs/trust.md gives the margins).
NEAR_LIMIT = {"Python/31": {"passed", "timeout"}, "Python/39": {"passed", "timeout"}}


@pytest.mark.slow
def test_controls_on_plus_and_the_known_failures_are_what_the_data_gives(
        humanfix_pytester, dataset_rows, read_records):
    """The canonical control fails HumanEval+ on exactly the listed tasks, but for those whose
    verdict the machine's speed decides; the buggy control fails it on every task."""
    from pytest_humanfix.plus.known import PLUS_KNOWN_FAILURES

    for model in ("canonical", "buggy"):
        humanfix_pytester.runpytest("--humanfix-model", model, "-n", "2", "--humanfix-tests",
                                    "plus")
        records = read_records()
        assert len(records) == len(dataset_rows)
        failed = {r["task_id"] for r in records if r["plus_verdict"]["status"] != "passed"}
        if model == "canonical":
            assert failed - set(NEAR_LIMIT) == set(PLUS_KNOWN_FAILURES) - set(NEAR_LIMIT)
            # Each reason says how it fails: too slow (an input past its own limit, long before
            # the program's), near the limit (either verdict, as the machine's speed decides),
            # or a wrong output.
            for record in records:
                task_id, status = record["task_id"], record["plus_verdict"]["status"]
                if task_id in NEAR_LIMIT:
                    assert status in NEAR_LIMIT[task_id], record
                    assert PLUS_KNOWN_FAILURES[task_id].startswith("near its limit")
                elif task_id in failed:
                    slow = PLUS_KNOWN_FAILURES[task_id].startswith("too slow")
                    assert (status == "timeout") == slow, record
                if status == "timeout":
                    assert " ran past its limit, 4 s of CPU" in record["plus_failure"], record
                    assert record["plus_verdict"]["seconds"] \
                        < record["plus_time_limit"]["seconds"] / 2, record
            # Known failures are counted apart whatever their verdict on this machine, so
            # pass@1+ is over the same 142 tasks everywhere.
            known = {r["task_id"] for r in records if r.get("plus_known_failure")}
            assert known == set(PLUS_KNOWN_FAILURES)
            summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
            assert summary["plus"]["pass_at_1_plus"] == {
                **summary["plus"]["pass_at_1_plus"], "value": 1.0, "tasks": 142}
            assert failed <= known and summary["plus"]["weak_test_fixes"] == []
        else:
            assert failed == {r["task_id"] for r in records}


def test_merge_keeps_both_verdicts(humanfix_pytester, dataset, tmp_path):
    """Shards run with plus, merged by `humanfix-report merge`, give the records and the
    HumanEval+ figures of one unsharded run."""
    from test_shards import merged_beside_single, records_of

    model = replay(dataset, humanfix_pytester.path / "replay.jsonl")
    args = (f"--humanfix-model=replay:{model}", "--humanfix-task=Python/0,Python/13",
            "--humanfix-tests=plus")
    out = tmp_path / "merged"
    merged = merged_beside_single(humanfix_pytester, out, *args)
    assert merged["plus"]["pass_at_1_plus"]["value"] == 0.5
    assert [row["task_id"] for row in merged["plus"]["weak_test_fixes"]] == ["Python/13"]
    keys = ("task_id", "outcome", "plus_outcome", "plus_failure")
    records = [{k: r[k] for k in keys} for r in records_of(out / "humanfix.jsonl")]
    assert records == [{k: r[k] for k in keys}
                       for r in records_of(humanfix_pytester.path / "single.jsonl")]
    assert [(r["outcome"], r["plus_outcome"]) for r in records] == [("fixed", "fixed"),
                                                                    ("fixed", "unfixed")]
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["humanfix_pass_at_1_plus"] == "0.5000"
    assert properties["humanfix_weak_test_fixes"] == "1"


def test_item_timeout_counts_the_plus_execution():
    """Each sample's final candidate also runs on HumanEval+, under its own limit, twice if it
    times out: the item's timeout makes room for it."""
    from pytest_humanfix.session.calibration import task_limit
    from pytest_humanfix.session.timeouts import item_timeout
    from pytest_humanfix.settings import Settings

    limit, plus_limit = task_limit(None, 4.0, 1.0, 10.0), task_limit(None, 4.0, 1.0, 94.0)
    for samples in (1, 2):
        settings = Settings(iters=0, samples=samples, timeout=10)
        assert item_timeout(settings, limit=limit, plus_limit=plus_limit) \
            == item_timeout(settings, limit=limit) + 2 * 94 * samples
