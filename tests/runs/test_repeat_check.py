"""--humanfix-repeat-check: the first attempt of the first N tasks generated twice, the replies
and outcomes that differ counted once in the summary and shown alike in the terminal, JUnit and
summary.json, beside the paired gate's verdict; and the gate's power at a flip rate."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from repeat_claims import summary_json

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.stats import detectable_drop, mcnemar_exact, mcnemar_power
from pytest_humanfix.reporting.terminal import share
from pytest_humanfix.session.timeouts import item_timeout
from pytest_humanfix.settings import Settings

TASKS = 4


def reply(code: str) -> str:
    return f"Here is the fixed function:\n\n```python\n{code}```\n"


@pytest.fixture
def replies(dataset: Path) -> dict[str, dict[str, str]]:
    """Per task id, its canonical and buggy replies, and the canonical one worded otherwise."""
    return {t.task_id: {"canonical": reply(t.canonical_code), "buggy": reply(t.buggy_code),
                        "reworded": reply(t.canonical_code).replace("Here is", "This is")}
            for t in load_tasks(str(dataset))[:TASKS]}


def write_replay(path: Path, plan: dict[str, list[str]],
                 replies: dict[str, dict[str, str]]) -> str:
    """A replay file giving each task its replies in the order planned."""
    path.write_text("".join(json.dumps({"task_id": task, "completion": replies[task][kind]}) + "\n"
                            for task, kinds in plan.items() for kind in kinds))
    return f"--humanfix-model=replay:{path}"


# The run's reply, then the repeat's: the same; reworded, same outcome; an outcome that flips
# (fixed, then not); and a task past the first three, never generated again.
PLAN = {"Python/0": ["canonical", "canonical"], "Python/1": ["canonical", "reworded"],
        "Python/2": ["canonical", "buggy"], "Python/3": ["buggy"]}
EXPECTED = {"Python/0": (False, False), "Python/1": (True, False), "Python/2": (True, True)}


def junit_properties(folder: Path) -> dict[str, str]:
    root = ET.parse(folder / "reports" / "junit.xml").getroot()
    return {p.get("name"): p.get("value") for p in root.iter("property")}


def assert_counted_alike(result: pytest.RunResult, folder: Path) -> None:
    """2 of 3 replies differ, 1 of 3 outcomes flips: in summary.json, the terminal, summary.md
    and JUnit."""
    repeat = summary_json(folder)["repeat_check"]
    assert repeat["tasks"] == 3 and repeat["errors"] == []
    assert (repeat["replies_differ"]["count"], repeat["replies_differ"]["of"]) == (2, 3)
    assert (repeat["outcomes_flipped"]["count"], repeat["outcomes_flipped"]["of"]) == (1, 3)
    assert repeat["flipped_tasks"] == ["Python/2"] and repeat["engines"] == ["replay"]
    result.stdout.fnmatch_lines([
        f"repeat check (replay): replies differ {share(repeat['replies_differ'])}, outcomes flip "
        f"{share(repeat['outcomes_flipped'])}: Python/2",
        "observed flip rate 1/3 on the repeat check: *"])
    assert "replies differ 2/3 (66.7% [" in result.stdout.str()
    assert f"- repeat check (replay): replies differ {share(repeat['replies_differ'])}" in \
        (folder / "reports" / "summary.md").read_text()
    properties = junit_properties(folder)
    assert (properties["humanfix_repeat_tasks"], properties["humanfix_repeat_replies_differ"],
            properties["humanfix_repeat_outcomes_flipped"]) == ("3", "2", "1")
    assert properties["humanfix_repeat_detectable_drop"] == \
        str(repeat["detectable_drop"]["drop"])


def test_replayed_replies_counted_exactly_and_alike_everywhere(
        humanfix_pytester, replies, records_by_task):
    model = write_replay(humanfix_pytester.path / "replies.jsonl", PLAN, replies)
    result = humanfix_pytester.runpytest(model, "--humanfix-max", str(TASKS),
                                         "--humanfix-repeat-check", "3")
    # pass@1 is the run's own first replies: the repeat is never scored.
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["pass@1 = 75.0% (3/4)*"])
    records = records_by_task()
    for task_id, (differs, flipped) in EXPECTED.items():
        check = records[task_id]["repeat_check"]
        assert (check["reply_differs"], check["outcome_flipped"]) == (differs, flipped)
        assert check["first_outcome"] == records[task_id]["outcome"] == "fixed"
        assert check["engine"] == "replay" and check["error"] == ""
    assert records["Python/2"]["repeat_check"]["outcome"] == "unfixed"
    assert records["Python/3"]["repeat_check"] is None
    assert_counted_alike(result, humanfix_pytester.path)


def test_counts_hold_under_xdist(humanfix_pytester, replies, records_by_task):
    model = write_replay(humanfix_pytester.path / "replies.jsonl", PLAN, replies)
    result = humanfix_pytester.runpytest(model, "--humanfix-max", str(TASKS),
                                         "--humanfix-repeat-check", "3", "-n", "2")
    result.assert_outcomes(passed=3, failed=1)
    assert {r["worker"] for r in records_by_task().values()} == {"gw0", "gw1"}
    assert_counted_alike(result, humanfix_pytester.path)


def test_a_second_engine_makes_the_repeat(humanfix_pytester, replies, records_by_task):
    """--humanfix-repeat-with: the repeat comes from another model spec, here a second replay;
    the first one is asked once per task."""
    path = humanfix_pytester.path
    model = write_replay(path / "run.jsonl", {t: ["canonical"] for t in PLAN}, replies)
    other = write_replay(path / "other.jsonl", {"Python/0": ["buggy"], "Python/1": ["canonical"]},
                         replies)
    result = humanfix_pytester.runpytest(model, "--humanfix-max", str(TASKS),
                                         "--humanfix-repeat-check", "2",
                                         "--humanfix-repeat-with=" + other.split("=", 1)[1])
    result.assert_outcomes(passed=TASKS)
    records = records_by_task()
    assert records["Python/0"]["repeat_check"]["spec"] == f"replay:{path / 'other.jsonl'}"
    assert [records[t]["repeat_check"]["outcome_flipped"] for t in ("Python/0", "Python/1")] \
        == [True, False]
    result.stdout.fnmatch_lines(["repeat check (replay): replies differ 1/2 *, outcomes flip "
                                 "1/2 *: Python/0"])


def test_a_failed_repeat_costs_the_task_nothing(humanfix_pytester, replies, records_by_task):
    """A repeat that cannot be made is named and left out of the counts; the task is scored
    on its own reply as ever."""
    path = humanfix_pytester.path
    model = write_replay(path / "run.jsonl", {t: ["canonical"] for t in PLAN}, replies)
    other = write_replay(path / "other.jsonl", {"Python/0": ["canonical"]}, replies)
    result = humanfix_pytester.runpytest(model, "--humanfix-max", str(TASKS),
                                         "--humanfix-repeat-check", "2",
                                         "--humanfix-repeat-with=" + other.split("=", 1)[1])
    result.assert_outcomes(passed=TASKS)
    assert "replay file has no reply for Python/1" in \
        records_by_task()["Python/1"]["repeat_check"]["error"]
    repeat = summary_json(path)["repeat_check"]
    assert repeat["tasks"] == 1 and [e["task_id"] for e in repeat["errors"]] == ["Python/1"]
    result.stdout.fnmatch_lines(["repeat check (replay): replies differ 0/1 *, outcomes flip 0/1 *",
                                 "repeat check failed on Python/1: *no reply for Python/1*"])


def test_a_repaired_task_compares_its_first_reply_alone(humanfix_pytester, replies,
                                                         records_by_task):
    """With repair rounds the run's outcome is not its first reply's: that reply is graded on
    its own for the comparison."""
    model = write_replay(humanfix_pytester.path / "replies.jsonl",
                         {"Python/0": ["buggy", "canonical", "buggy"]}, replies)
    humanfix_pytester.runpytest(model, "--humanfix-task", "Python/0", "--humanfix-iters", "1",
                                "--humanfix-repeat-check", "1")
    record = records_by_task()["Python/0"]
    assert record["outcome"] == "fixed" and len(record["attempts"]) == 2
    check = record["repeat_check"]
    assert (check["first_outcome"], check["outcome"]) == ("unfixed", "unfixed")
    assert not check["reply_differs"] and not check["outcome_flipped"]


def test_a_primed_first_reply_is_graded_again_as_the_continuation_it_was(
        humanfix_pytester, dataset, records_by_task):
    task = load_tasks(str(dataset))[0]
    buggy, canonical = "\n" + task.buggy_solution, "\n" + task.canonical_solution
    path = humanfix_pytester.path / "continuations.jsonl"
    path.write_text("".join(json.dumps({"task_id": task.task_id, "completion": c}) + "\n"
                            for c in [buggy, canonical, buggy]))
    humanfix_pytester.runpytest(f"--humanfix-model=replay:{path}", "--humanfix-prompt=primed",
                                "--humanfix-task", task.task_id, "--humanfix-iters", "1",
                                "--humanfix-repeat-check", "1")
    record = records_by_task()[task.task_id]
    assert record["outcome"] == "fixed" and record["error"] == ""
    assert [a["prompt"] for a in record["attempts"]] == ["primed", "primed"]
    check = record["repeat_check"]
    assert check["error"] == "" and check["code"] == record["attempts"][0]["code"]
    assert (check["first_outcome"], check["outcome"]) == ("unfixed", "unfixed")


def test_the_gate_states_the_flip_rate_beside_its_verdict(humanfix_pytester, replies):
    path = humanfix_pytester.path
    baseline = write_replay(path / "baseline.jsonl", {t: ["canonical"] for t in PLAN}, replies)
    humanfix_pytester.runpytest(baseline, "--humanfix-max", str(TASKS),
                                "--humanfix-jsonl=baseline-run.jsonl")
    model = write_replay(path / "replies.jsonl", PLAN, replies)
    result = humanfix_pytester.runpytest(model, "--humanfix-max", str(TASKS),
                                         "--humanfix-repeat-check", "3",
                                         "--humanfix-baseline=baseline-run.jsonl")
    repeat = summary_json(path)["repeat_check"]
    drop = repeat["detectable_drop"]
    # Four paired tasks: even all four regressing gives p = 1/16, so no drop is ever caught.
    assert drop == {"tasks": TASKS, "alpha": 0.05, "power": 0.8, "drop": None}
    verdict = next(line for line in result.outlines if line.startswith("humanfix gate"))
    assert verdict.startswith("humanfix gates held: 1 regression(s), 0 improvement(s)")
    assert verdict.endswith("; observed flip rate 1/3 on the repeat check: over 4 task(s) no "
                            "drop is caught with 80.0% power at alpha 0.05")
    assert junit_properties(path)["humanfix_gate"] == verdict
    reason = summary_json(path)["gates"][0]["reason"]
    assert reason in verdict
    # humanfix-report, over the same results, quotes the same flip rate in the same words.
    assert report_main([str(path / "reports" / "humanfix.jsonl"), "--baseline",
                        str(path / "baseline-run.jsonl"), "--out", str(path / "again")]) == 0
    again = json.loads((path / "again" / "summary.json").read_text())
    assert again["gates"][0]["reason"] == reason
    assert again["repeat_check"] == repeat


@pytest.mark.parametrize(("args", "message"), [
    (("--humanfix-repeat-check", "0"),
     "--humanfix-repeat-check / humanfix_repeat_check: '0' must be 1 or more"),
    (("--humanfix-repeat-check", "x"),
     "--humanfix-repeat-check / humanfix_repeat_check: 'x' must be a whole number of 1 or more"),
    (("--humanfix-repeat-with", "canonical"),
     "--humanfix-repeat-with names the model of the repeat check: give "
     "--humanfix-repeat-check N too."),
    (("--humanfix-repeat-check", "2", "--humanfix-repeat-with", "no-such-model"),
     "--humanfix-repeat-with: unknown model 'no-such-model'.*"),
])
def test_usage_errors(humanfix_pytester, args, message):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_power_matches_hand_counted_cases():
    # No noise: a drop of d tasks is d regressions and nothing else, p = 1/2**d.
    assert mcnemar_exact(4, 0) == 1 / 16 and mcnemar_exact(5, 0) == 1 / 32
    assert mcnemar_power(164, 0.0, 4, 0.05) == 0.0
    assert mcnemar_power(164, 0.0, 5, 0.05) == 1.0
    assert detectable_drop(164, 0.0, 0.05) == 5
    # Six tasks, five regress, the sixth flips with probability 1/2: it stays (p = 1/32, caught)
    # with 1/2, regresses too (1/64, caught) with 1/4, improves (7/64, not caught) with 1/4.
    assert mcnemar_power(6, 0.5, 5, 0.05) == pytest.approx(0.75)
    # No drop at all: the gate fails a run as often as its size, at most alpha.
    assert 0 < mcnemar_power(164, 0.1, 0, 0.05) <= 0.05


def test_power_agrees_with_a_simulation():
    tasks, flip_rate, drop, alpha, draws = 40, 0.2, 6, 0.05, 4000
    rng = random.Random(0)
    caught = 0
    for _ in range(draws):
        flips = sum(rng.random() < flip_rate for _ in range(tasks - drop))
        regressions = sum(rng.random() < 0.5 for _ in range(flips))
        caught += mcnemar_exact(drop + regressions, flips - regressions) < alpha
    exact = mcnemar_power(tasks, flip_rate, drop, alpha)
    standard_error = (exact * (1 - exact) / draws) ** 0.5
    assert 0.2 < exact < 0.95
    assert abs(caught / draws - exact) < 4 * standard_error


def test_the_item_timeout_allows_the_repeat():
    """The repeat's reply and its grading runs, the run's first reply graded again among them,
    fit in the item's budget."""
    plain = Settings(timeout=10, request_timeout=300)
    checked = Settings(timeout=10, request_timeout=300, repeat_check=5)
    assert item_timeout(checked) == item_timeout(plain) + 4 * 20  # its reply is off the clock
