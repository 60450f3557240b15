"""A run writes its page, reports/index.html, and a failed baseline gate names each regressed
task with why and points to that page: the canonical control as the baseline, the buggy one
against it."""

from __future__ import annotations

import json
import re

DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


def test_a_failed_gate_names_each_regressed_task_and_the_page(humanfix_pytester):
    base = ["-p", "no:cacheprovider", "--humanfix-max", "4"]
    humanfix_pytester.runpytest(*base, "--humanfix-model", "canonical",
                                "--humanfix-report-dir", "base").assert_outcomes(passed=4)
    result = humanfix_pytester.runpytest(*base, "--humanfix-model", "buggy",
                                         "--humanfix-baseline", "base/humanfix.jsonl",
                                         "--humanfix-max-regressions", "0")
    assert result.ret == 1
    lines = result.outlines
    # Just above the verdict, which stays the summary's last line.
    verdict = next(i for i, line in enumerate(lines) if line.startswith("humanfix gate FAILED"))
    assert lines[verdict + 1].startswith("=")
    named = lines[verdict - 5:verdict]
    assert [line.split(":")[0] for line in named[:4]] == [
        f"  regressed Python/{n}" for n in range(4)]
    assert named[0] == ("  regressed Python/0: fixed in the baseline (round 0), now failed: "
                        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False")
    assert named[4] == "  the regressed tasks beside the baseline's fixes: reports/index.html"
    page = (humanfix_pytester.path / "reports" / "index.html").read_text()
    tasks = json.loads(DATA.findall(page)[0])["tasks"]
    assert [(t["id"], t["flip"], t["baseline"]["outcome"]) for t in tasks] == [
        (f"Python/{n}", "regression", "fixed") for n in range(4)]
    # The page shows the buggy code the run repaired, from the run's own tasks.
    assert tasks[0]["buggy"].startswith("from typing import List")
    assert (humanfix_pytester.path / "base" / "index.html").is_file()  # every run writes one
