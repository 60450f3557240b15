"""The arms' records committed under benchmarks/records/ give the rows docs/benchmarks.md shows
of them: `humanfix-report compare`'s figures, written as the page writes them, are on the page;
and a recomputed arm is the one the page documented before, fix for fix and token for token."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from pytest_humanfix.records import natural_order
from pytest_humanfix.reporting import compare

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "benchmarks" / "records"
PAGE = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def rows(compared: dict, half: str) -> list[str]:
    """The page's row of each run: fixed within its rounds, by round, replies, tokens, seconds
    in tasks, the tasks only it fixed, and (on the first) the two-sided McNemar p."""
    only = (compared["only_first"], compared["only_second"])
    written = []
    for number, run in enumerate(compared["runs"]):
        total, curve = run["cost"]["total"], run["curve"]
        numbers = [str(natural_order(task)[1]) for task in only[number]]
        fixed = "Python/" + ", ".join(numbers) if numbers else "none"
        p_value = f"p = {compared['p_value']:.3g}" if number == 0 else ""
        written.append(
            f"| {half} ({compared['tasks']}) | `{run['agent']}` | {curve[-1]['fixed']}/"
            f"{compared['tasks']} | {' / '.join(str(point['fixed']) for point in curve)} | "
            f"{total['replies']} | {total['tokens']:,} ({total['prompt_tokens']:,} + "
            f"{total['completion_tokens']:,}) | {round(total['seconds']):,} | {fixed} | "
            f"{p_value} |")
    return written


@pytest.fixture(scope="module")
def even() -> dict:
    folder = RECORDS / "qwen-coder-even"
    first, second, selection = compare.selected(
        records(folder / "hinted.jsonl.gz"), records(folder / "resample.jsonl.gz"), "even")
    return compare.side_by_side(first, second, ("hinted", "resample"), selection)


def test_the_hinted_candidates_rows_are_what_compare_gives_on_its_records(even):
    assert even["tasks"] == 82
    for row in rows(even, "even"):
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"


def test_the_recomputed_resample_arm_is_the_documented_one(even):
    """The even half's `resample` row of "All 164 tasks, each half", computed on another
    machine before: the same fixes by round, replies and tokens."""
    documented = re.search(r"^\| even \(82\) \| `resample` \| (\d+)/82 \| ([\d /]+) \| (\d+) \| "
                           r"([\d,]+) \|", PAGE, re.MULTILINE)
    assert documented is not None
    resample = even["runs"][1]
    assert resample["agent"] == "resample"
    assert str(resample["curve"][-1]["fixed"]) == documented[1]
    assert " / ".join(str(point["fixed"]) for point in resample["curve"]) == documented[2]
    assert str(resample["cost"]["total"]["replies"]) == documented[3]
    assert f"{resample['cost']['total']['tokens']:,}" == documented[4]
