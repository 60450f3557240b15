"""pass@1 and what it counts (reporting/rates.py), on literal records."""

from __future__ import annotations

import pytest
from reporting_records import record

from pytest_humanfix.reporting import rates
from pytest_humanfix.reporting.stats import wilson_interval


def test_a_record_without_samples_counts_as_one_sample():
    assert rates.sample_counts(record("a", "fixed")) == (1, 1)
    assert rates.sample_counts(record("a", "unfixed")) == (1, 0)
    assert rates.sample_counts(record("a", "fixed", n=4, n_fixed=3)) == (4, 3)


def test_within_a_round_a_later_fix_or_an_untold_one_counts_as_not_fixed():
    samples = [{"outcome": "fixed", "fixed_round": 0}, {"outcome": "fixed", "fixed_round": 2},
               {"outcome": "fixed"}, {"outcome": "unfixed"}]
    made = record("a", "fixed", n=4, n_fixed=3, fixed_round=0, samples=samples)
    assert rates.fixed_rounds(made) == [0, 2, None]
    assert rates.sample_counts(made, within=0) == (4, 1)
    assert rates.sample_counts(made, within=2) == (4, 2)
    assert rates.sample_counts(made) == (4, 3)


def test_the_first_sample_without_its_round_takes_the_records_graded_round():
    made = record("a", "fixed", attempts=[{"round": 0}, {"round": 1}], final_attempt=1,
                  samples=[{"outcome": "fixed"}])
    assert rates.fixed_rounds(made) == [1]


def test_an_error_is_scored_not_fixed_and_an_item_timeout_is_no_harness_error():
    flagged = record("a", "error", item_timeout=True)
    older = record("b", "error", error="item timeout fired after 60 s")
    fault = record("c", "error", error="boom")
    assert rates.item_timed_out(flagged) and rates.item_timed_out(older)
    assert not rates.item_timed_out(fault)
    assert not rates.harness_error(flagged) and rates.harness_error(fault)
    assert all(rates.scored(r) for r in (flagged, older, fault))
    assert [rates.sample_counts(r) for r in (flagged, older, fault)] == [(1, 0)] * 3


def test_an_error_fixed_nothing_whatever_its_samples_fixed_before_it():
    # --humanfix-samples: a harness error in the third sample ends the task in an error.
    samples = [{"outcome": "fixed", "fixed_round": 0, "plus_outcome": "fixed"},
               {"outcome": "fixed", "fixed_round": 1, "plus_outcome": "fixed"},
               {"outcome": "error"}]
    made = record("a", "error", n=3, n_fixed=2, samples=samples, plus_outcome="fixed",
                  protocol={"tests": "plus"})
    assert rates.sample_counts(made) == rates.sample_counts(made, within=0) == (3, 0)
    assert rates.fixed_rounds(made) == []
    plus = rates.plus([made])
    assert plus is not None
    assert (plus["pass_at_1_plus"]["value"], plus["fixed_plus"]) == (0.0, 0)


def test_turning_any_failure_into_an_error_never_raises_pass_at_1():
    outcomes = ["fixed", "unfixed", "unfixed", "fixed", "unfixed"]
    records = [record(f"t{n}", outcome) for n, outcome in enumerate(outcomes)]
    before = rates.rate(records)["value"]
    for n in range(len(records)):
        for kind in ({"error": "boom"}, {"item_timeout": True}):
            changed = [*records[:n], record(f"t{n}", "error", **kind), *records[n + 1:]]
            assert rates.rate(changed)["value"] <= before
            assert rates.rate(changed)["tasks"] == len(records)


def test_a_known_failure_is_not_scored():
    assert not rates.scored(record("a", "unfixed", known_failure="no toolchain"))
    assert not rates.scored(record("a", "error", known_failure="no toolchain"))
    assert rates.scored(record("a", "unfixed"))


def test_rate_is_the_mean_of_c_over_n_with_a_wilson_interval_over_tasks():
    records = [record("a", "fixed", n=4, n_fixed=1), record("b", "unfixed", n=4, n_fixed=3),
               record("c", "error", error="boom")]
    figure = rates.rate(records)
    assert figure["value"] == pytest.approx((1 / 4 + 3 / 4 + 0) / 3)
    assert figure["tasks"] == 3
    assert figure["ci95"] == list(wilson_interval(1.0, 3))


def test_rate_of_no_scored_record_is_zero_over_the_widest_interval():
    assert rates.rate([record("a", "unfixed", known_failure="flaky")]) == {
        "value": 0.0, "ci95": [0.0, 1.0], "tasks": 0}


def test_by_round_runs_to_the_protocols_iters_and_ends_at_pass_at_1():
    records = [record("a", "fixed", fixed_round=0, protocol={"iters": 2}),
               record("b", "fixed", fixed_round=2, protocol={"iters": 2}),
               record("c", "unfixed", protocol={"iters": 2})]
    points = rates.by_round(records)
    assert [p["round"] for p in points] == [0, 1, 2]
    assert [p["fixed"] for p in points] == [1, 1, 2]
    last = points[-1]
    assert {k: last[k] for k in ("value", "ci95", "tasks")} == rates.rate(records)


def test_by_round_reaches_the_latest_round_a_fix_was_made_in():
    points = rates.by_round([record("a", "fixed", fixed_round=3)])
    assert [p["round"] for p in points] == [0, 1, 2, 3]


def test_plus_names_weak_test_fixes_and_leaves_known_failures_out_of_pass_at_1_plus():
    protocol = {"tests": "plus"}
    records = [record("a", "fixed", plus_outcome="fixed", protocol=protocol),
               record("b", "fixed", plus_outcome="unfixed", plus_failure="x != y",
                      protocol=protocol),
               record("c", "unfixed", plus_outcome="unfixed", plus_known_failure="slow",
                      protocol=protocol)]
    assert rates.plus([record("a", "fixed")]) is None
    figures = rates.plus(records)
    assert figures is not None
    assert figures["pass_at_1"] == rates.rate(records)
    assert figures["pass_at_1_plus"]["tasks"] == 2
    assert figures["pass_at_1_plus"]["value"] == pytest.approx(0.5)
    assert figures["fixed_plus"] == 1
    assert figures["weak_test_fixes"] == [{"task_id": "b", "failure": "x != y"}]
    assert figures["known_failures"] == [{"task_id": "c", "outcome": "unfixed",
                                          "plus_outcome": "unfixed", "reason": "slow"}]


def test_the_cost_sums_every_record_and_divides_by_tasks_and_by_fixes():
    records = [record("a", "fixed", tokens={"prompt": 300, "completion": 100}, replies=2,
                      sandbox_runs=3, seconds=4.0),
               record("b", "unfixed", tokens={"prompt": 500, "completion": 300}, replies=4,
                      sandbox_runs=5, seconds=8.0),
               record("c", "error", error="boom", tokens={"prompt": 100, "completion": 0},
                      replies=1, sandbox_runs=0, seconds=3.0)]
    cost = rates.cost(records)
    assert (cost["tasks"], cost["fixed"]) == (3, 1)
    assert cost["total"] == {"prompt_tokens": 900, "completion_tokens": 400, "tokens": 1300,
                             "replies": 7, "sandbox_runs": 8, "seconds": 15.0}
    assert cost["per_task"]["tokens"] == pytest.approx(1300 / 3)
    assert cost["per_fix"]["replies"] == 7 and cost["per_fix"]["seconds"] == 15.0


def test_an_older_record_counts_its_attempts_as_replies_and_no_fix_has_no_price():
    old = record("a", "unfixed", attempts=[{}, {}, {}], seconds=2.0)
    assert rates.task_cost(old) == {"prompt_tokens": 0, "completion_tokens": 0, "tokens": 0,
                                    "replies": 3, "sandbox_runs": 0, "seconds": 2.0}
    assert rates.cost([old])["per_fix"] is None
    assert rates.cost([])["per_task"] is None
