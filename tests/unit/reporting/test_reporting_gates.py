"""The CI gates (reporting/gates.py) on literal records and figures."""

from __future__ import annotations

import json

import pytest
from reporting_records import record

from pytest_humanfix.protocol import RunProtocol, run_fingerprint, without_model
from pytest_humanfix.reporting.gates import (
    BaselineError,
    Comparison,
    GateCheck,
    agent_error_check,
    check_gates,
    compare,
    completeness_check,
    computed_by_check,
    load_baseline,
    noise_note,
    verdict_line,
)
from pytest_humanfix.settings import Settings


def test_compare_pairs_each_task_with_its_baseline_outcome():
    baseline = {r["task_id"]: r for r in [record("a"), record("b", "unfixed"), record("c"),
                                          record("d", "unfixed"), record("e", "error")]}
    now = [record("a", "unfixed"), record("b"), record("c"), record("d", "unfixed"),
           record("e"), record("f")]
    result = compare(now, baseline)
    # e: an error in the baseline is not fixed there, so its fix now is an improvement.
    assert (result.regressions, result.improvements, result.unpaired) == (["a"], ["b", "e"],
                                                                         ["f"])
    assert (result.both_fixed, result.both_unfixed, result.paired) == (1, 1, 5)


def test_a_fix_lost_to_an_error_is_a_regression_and_an_error_never_helps_the_gate():
    baseline = {t: record(t) for t in ("a", "b", "c")}
    # Whatever ends a fixed task in an error now, a harness fault or an item timeout, counts
    # against the run: the paired test sees two regressions, pass@1 two tasks fewer.
    now = [record("a", "error", error="sandbox broke"),
           record("b", "error", item_timeout=True, error="item timeout fired"), record("c")]
    result = compare(now, baseline)
    assert (result.regressions, result.unpaired, result.paired) == (["a", "b"], [], 3)
    figures = result.figures()
    assert figures["change"] == pytest.approx(-2 / 3)


def test_the_comparisons_figures_hold_the_counts_the_p_value_and_the_test():
    comparison = Comparison(regressions=["a", "b", "c"], improvements=[], both_fixed=2)
    figures = comparison.figures()
    assert list(figures) == ["regressions", "improvements", "both_fixed", "both_unfixed",
                             "unpaired", "paired", "p_value", "test", "pass_at_1", "change",
                             "model", "agent", "run_ids", "computed_by"]
    assert figures["p_value"] == pytest.approx(0.125)
    assert figures["paired"] == 5
    figures["regressions"].append("z")
    assert comparison.regressions == ["a", "b", "c"]  # the summary holds a copy


def test_the_comparison_lists_tasks_in_natural_order_and_says_what_the_baseline_was():
    ids = ["Python/10", "Python/2", "Python/100", "Python/1"]
    baseline = {t: record(t, run_id="base-run", model="qwen",
                          protocol={"agent": "agents.py:fix@0123456789ab"},
                          computed_by={"engine": "llama.cpp", "version": "b1"}) for t in ids}
    baseline["Python/7"] = record("Python/7", "unfixed", run_id="base-run")
    now = [record(t, "unfixed") for t in ids] + [record("Python/7"), record("Python/3")]
    figures = compare(now, baseline).figures()
    assert figures["regressions"] == ["Python/1", "Python/2", "Python/10", "Python/100"]
    assert figures["improvements"] == ["Python/7"] and figures["unpaired"] == ["Python/3"]
    # The baseline's pass@1 over the 5 paired tasks (4 fixed), and the change to this run's
    # over the same 5 (1 fixed; Python/3, fixed, has no baseline to pair with).
    assert figures["pass_at_1"]["value"] == pytest.approx(4 / 5)
    assert figures["pass_at_1"]["tasks"] == 5
    assert figures["change"] == pytest.approx(1 / 5 - 4 / 5)
    assert (figures["model"], figures["agent"], figures["run_ids"]) == \
        ("qwen", "agents.py:fix@0123456789ab", ["base-run"])
    assert figures["computed_by"] == "llama.cpp; b1"


def test_a_baseline_of_fewer_tasks_or_with_errors_changes_nothing_where_the_pairs_agree():
    # A baseline made with --humanfix-max 4 of a run over 10: the same outcome on each task
    # both hold; the run's other tasks, all unfixed, are unpaired and move neither figure; a
    # task both runs ended in an error pairs as not fixed on both sides.
    outcomes = ["fixed", "fixed", "unfixed", "fixed"]
    baseline = {f"t{n}": record(f"t{n}", outcome) for n, outcome in enumerate(outcomes)}
    baseline["t4"] = record("t4", "error", error="worker crashed")
    now = [record(f"t{n}", outcome) for n, outcome in enumerate(outcomes)] + \
        [record("t4", "error", error="worker crashed")] + \
        [record(f"t{n}", "unfixed") for n in range(5, 10)]
    figures = compare(now, baseline).figures()
    assert figures["paired"] == 5 and figures["pass_at_1"]["tasks"] == 5
    assert figures["pass_at_1"]["value"] == pytest.approx(3 / 5)
    assert figures["change"] == 0.0
    assert figures["regressions"] == figures["improvements"] == []


def summary_with_agent_errors(raised: int, scored: int) -> dict:
    return {"tasks": {"agent_errors": raised, "scored": scored},
            "agent_errors": [{"task_id": f"Python/{n}", "type": "ValueError",
                              "message": "no model"} for n in range(raised)]}


def test_the_agent_raising_is_named_by_the_gates_and_fails_them_when_it_raised_on_all():
    assert agent_error_check(summary_with_agent_errors(0, 5)) is None
    some = agent_error_check(summary_with_agent_errors(2, 5))
    assert some.passed and some.reason == (
        "the agent raised on 2 of 5 scored task(s), scored not fixed (first, Python/0: "
        "ValueError: no model)")
    every = agent_error_check(summary_with_agent_errors(5, 5))
    assert not every.passed and "every one of the 5 scored task(s)" in every.reason
    assert "humanfix gate FAILED: the agent raised on every one" in verdict_line(
        [GateCheck("fail-under", True, "held"), every])


def test_fail_under_holds_at_the_floor_and_never_over_no_task():
    held, = check_gates(0.5, 4, 0.5, None, 0.05, None)
    assert held.passed and "at or above" in held.reason
    under, = check_gates(0.5, 0, 0.4, None, 0.05, None)
    assert not under.passed


def test_the_baseline_gate_fails_on_a_significant_drop_and_quotes_the_noise():
    comparison = Comparison(regressions=[f"t{n}" for n in range(6)])
    baseline, regressions = check_gates(1.0, 6, None, comparison, 0.05, 5, noise="flips 0/6")
    assert not baseline.passed and baseline.reason.endswith("; flips 0/6")
    assert not regressions.passed and regressions.name == "max-regressions"


def test_noise_note_says_what_drop_the_gate_can_catch():
    repeat = {"outcomes_flipped": {"count": 1, "of": 10, "rate": 0.1, "ci95": [0.0, 0.4]},
              "detectable_drop": {"tasks": 10, "alpha": 0.05, "power": 0.8, "drop": 6}}
    assert noise_note(repeat) == (
        "observed flip rate 1/10 on the repeat check: over 10 task(s) a drop smaller than 6 "
        "task(s) is within noise (the gate catches 6 with 80.0% power at alpha 0.05)")
    repeat["detectable_drop"]["drop"] = None
    assert "no drop is caught" in noise_note(repeat)


def test_completeness_fails_a_run_that_left_selected_tasks_out():
    assert completeness_check(None) is None
    covered = {"selected": 4, "run": 2, "not_run": 2, "subset": True,
               "why": ["2 deselected by -k"], "not_run_tasks": {}, "reruns": 0}
    check = completeness_check(covered)
    assert check is not None and not check.passed
    assert check.reason.startswith("2 of 4 selected task(s) did not run (2 deselected by -k)")


def test_a_baseline_computed_otherwise_warns_or_fails_as_asked():
    before = [record("a", computed_by={"engine": "x"})]
    after = [record("a", computed_by={"engine": "y"})]
    assert computed_by_check(before, before, "warn") is None
    warned = computed_by_check(before, after, "warn")
    assert warned is not None and warned.passed and warned.reason.startswith("WARNING")
    failed = computed_by_check(before, after, "error")
    assert failed is not None and not failed.passed


def test_the_verdict_gives_the_failed_gates_reasons_or_every_held_one():
    held, failed = GateCheck("a", True, "fine"), GateCheck("b", False, "dropped")
    assert verdict_line([held]) == "humanfix gates held: fine"
    assert verdict_line([held, failed]) == "humanfix gate FAILED: dropped"
    assert held.row() == {"name": "a", "passed": True, "reason": "fine"}


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_baseline_is_read_by_task_the_last_record_winning(tmp_path):
    path = write(tmp_path / "b.jsonl", record("a", "unfixed"), record("a"))
    assert load_baseline(path, {"python": {"model": None, "protocol": None,
                                           "dataset_hash": None}})["a"]["outcome"] == "fixed"


@pytest.mark.parametrize(("lines", "message"), [
    (None, "is not a file"),
    ([{"x": 1}], "is not a humanfix result record"),
    ([record("a", language="go")], "holds go results"),
    ([record("a", dataset_hash="other")], "another protocol or dataset"),
    ([], "holds no result records"),
])
def test_a_baseline_that_cannot_be_compared_is_refused_saying_why(tmp_path, lines, message):
    path = tmp_path / "b.jsonl"
    if lines is not None:
        write(path, *lines)
    wanted = {"python": {"model": None, "protocol": None, "dataset_hash": None}}
    with pytest.raises(BaselineError, match=message):
        load_baseline(path, wanted)


def made_with(settings):
    return RunProtocol.of(settings, "python").to_json()


def baseline_of(tmp_path, settings):
    return write(tmp_path / "b.jsonl", record("Python/0", language="python", dataset_hash="h",
                                              model="old", protocol=made_with(settings)))


@pytest.mark.parametrize(("field", "made", "now", "option"), [
    ("tests", Settings(tests="plus"), Settings(), "--humanfix-tests"),
    ("tests", Settings(), Settings(tests="plus"), "--humanfix-tests"),
    ("chat_stop", Settings(chat_stop="none"), Settings(), "--humanfix-chat-stop"),
    ("chat_stop", Settings(), Settings(chat_stop="none"), "--humanfix-chat-stop"),
])
def test_a_baseline_made_with_other_tests_or_chat_stop_is_refused(tmp_path, field, made, now,
                                                                  option):
    wanted = {"python": without_model(run_fingerprint("new", made_with(now), "h"))}
    with pytest.raises(BaselineError, match=f"another protocol or dataset \\({field}: ") as e:
        load_baseline(baseline_of(tmp_path, made), wanted)
    assert str(e.value).endswith(f"Re-run the baseline with this run's options ({option}).")
    assert set(load_baseline(baseline_of(tmp_path, now), wanted)) == {"Python/0"}


@pytest.mark.parametrize(("made", "now"), [(Settings(agent="tools"), Settings()),
                                           (Settings(), Settings(agent="tools"))])
def test_a_baseline_of_another_agent_is_compared_as_of_another_model(tmp_path, made, now):
    # The gate compares what is evaluated, the model or the agent, under one protocol.
    wanted = {"python": without_model(run_fingerprint("new", made_with(now), "h"))}
    assert set(load_baseline(baseline_of(tmp_path, made), wanted)) == {"Python/0"}


def test_a_known_failure_that_flips_is_left_out_of_the_paired_gates():
    # Go/95-like: the listed task passed in the baseline and fails now (and one the other way).
    baseline = {r["task_id"]: r for r in [
        record("Go/95", known_failure="flaky"), record("Go/7", "unfixed", known_failure="x"),
        *(record(f"Go/{n}") for n in range(3))]}
    now = [record("Go/95", "unfixed", known_failure="flaky"), record("Go/7"),
           *(record(f"Go/{n}") for n in range(3))]
    comparison = compare(now, baseline)
    assert (comparison.regressions, comparison.improvements) == ([], [])
    assert comparison.unpaired == ["Go/95", "Go/7"] and comparison.both_fixed == 3
    baseline_gate, most = check_gates(1.0, 3, None, comparison, 0.05, 0)
    assert baseline_gate.passed and most.passed
    # Listed on one side only (a list changed between the runs), it is still left out.
    listed_before = compare([record("Go/95", "unfixed")], {"Go/95": baseline["Go/95"]})
    assert listed_before.unpaired == ["Go/95"] and not listed_before.regressions
