"""The terminal's lines (reporting/terminal.py), rendered from literal summary sections."""

from __future__ import annotations

from reporting_records import record

from pytest_humanfix.reporting import terminal
from pytest_humanfix.reporting.summary import build, times_from_records


def summary_of(records, **facts):
    return build(records, {**times_from_records([]), **facts})


def test_interval_is_the_value_and_its_bounds_as_percentages():
    assert terminal.interval({"value": 0.5, "ci95": [0.25, 0.75], "tasks": 4}) == \
        "50.0% [25.0%, 75.0%]"


def test_the_pass_line_gives_a_fraction_with_one_sample_and_the_estimate_with_several():
    counts = {"total": 2, "scored": 2, "errors": 0, "item_timeouts": 0, "fixed": 1,
              "unfixed": 1, "flagged": 0, "known_failures": 0}
    rate = {"value": 0.5, "ci95": [0.1, 0.9], "tasks": 2}
    assert terminal.rate_line(rate, counts, 1, {"iters": 0}) == \
        "pass@1 = 50.0% (1/2) = 0.5000  [iters=0]"
    assert terminal.rate_line(rate, counts, 3, None) == (
        "pass@1 = 50.0% (unbiased over 3 samples of 2 tasks; first sample fixed 1/2) = 0.5000")


def test_the_bug_type_table_aligns_its_columns():
    rows = build([record("a", bug_type="value misuse"), record("b", "unfixed", bug_type="x")],
                 times_from_records([]))["by_bug_type"]
    lines = terminal.bug_type_table(rows)
    assert lines[0] == "bug type      fixed  scored  errors  pass@1"
    assert lines[1] == "value misuse      1       1       0  100.0%"
    assert terminal.bug_type_table([]) == []


def test_a_subset_is_warned_of_and_reruns_are_counted():
    summary = summary_of([record("a", reruns=[{"outcome": "error"}])])
    summary["coverage"].update(subset=True, selected=3, why=["2 deselected by -k"])
    lines = terminal.coverage_lines(summary)
    assert lines[0] == ("WARNING: pass@1 is over a subset: 1 of 3 selected task(s) ran; not "
                        "run: 2 deselected by -k")
    assert lines[1].startswith("1 task(s) were run again")


def test_item_timeouts_and_harness_errors_are_named_and_scored_not_fixed():
    summary = summary_of([record("a"), record("b", "error", item_timeout=True),
                          record("c", "error", error="sandbox broke",
                                 first_try={"outcome": "error", "error": "sandbox broke"}),
                          record("d", "unfixed", first_try={"outcome": "error", "error": "x"})])
    assert terminal.item_timeout_lines(summary) == [
        "WARNING: 1 task(s) stopped by the item timeout (generation excluded), scored not "
        "fixed: b; raise --humanfix-item-timeout"]
    assert terminal.error_lines(summary) == [
        "WARNING: 1 task(s) ended in a harness error, scored not fixed: c (retried)",
        "retried after a harness error: 2 task(s), 1 finished on the retry"]
    lines = terminal.summary_lines(summary)
    assert lines[2].startswith("pass@1 = 25.0% (1/4)")
    assert lines[3] == ("fixed 1, not fixed 1, errors 1 (harness faults, scored not fixed), "
                        "item timeouts 1 (scored not fixed)")
    assert terminal.item_timeout_lines(summary_of([record("a")])) == []
    assert terminal.error_lines(summary_of([record("a")])) == []


def test_flagged_fixes_say_how_they_are_scored():
    lenient = terminal.flagged_lines(summary_of([record("a", flags=["reads the tests"])]))
    assert lenient == ["fixed, flagged: 1 (still counted in pass@1; --humanfix-strict scores "
                       "them not fixed)", "  flagged a: reads the tests"]
    strict = terminal.flagged_lines(summary_of([record("a")], protocol={"strict": True}))
    assert strict == ["fixed, flagged: 0 (scored not fixed (--humanfix-strict))"]


def test_the_baseline_lines_name_regressions_and_improvements():
    baseline = {"regressions": ["a"], "improvements": [], "both_fixed": 0, "both_unfixed": 0,
                "unpaired": ["b"], "paired": 1, "p_value": 0.5, "test": "t"}
    assert terminal.baseline_lines(baseline) == [
        "baseline: 1 paired tasks, 1 regression(s), 0 improvement(s), 1 unpaired; exact "
        "McNemar one-sided p=0.5", "regressions: a", "improvements: none"]
    assert terminal.baseline_lines(None) == []


def test_round_lines_appear_only_with_repair_rounds():
    one = summary_of([record("a", fixed_round=0)])
    assert terminal.round_lines(one) == []
    rounds = summary_of([record("a", fixed_round=1, protocol={"iters": 1},
                                attempts=[{"round": 0}, {"round": 1, "status": "repeat"}])])
    lines = terminal.round_lines(rounds)
    assert lines[0] == "pass@1 by round: r0 0.0% \u00b7 r1 100.0%"
    assert lines[1].startswith("repair replies: 1, 1 repeated failed code (100.0%)")


def test_the_summary_lines_end_with_the_details_and_several_languages_get_a_table_each():
    records = [record("Python/0"), record("JavaScript/0", "unfixed", language="js")]
    lines = terminal.summary_lines(summary_of(records, model="m"))
    assert lines[0] == "model: m"
    assert any(line.startswith("language python: pass@1 = 100.0% (1/1)") for line in lines)
    assert any(line.startswith("language js: pass@1 = 0.0% (0/1)") for line in lines)
    assert any(line.startswith("tokens: 0 (0 prompt, 0 completion)") for line in lines)
    assert lines[-1] == "slowest: Python/0 0.00s, JavaScript/0 0.00s"


def test_servers_are_listed_for_a_fleet_and_when_one_is_taken_out():
    attempts = [{"server": "http://a", "generate_seconds": 1.0},
                {"server": "http://b", "generate_seconds": 3.0}]
    summary = summary_of([record("a", attempts=attempts,
                                 servers_out=[{"base_url": "http://b", "reason": "down"}])])
    assert terminal.server_lines(summary) == [
        "servers: http://a 1 request(s), 1.00s mean, http://b 1 request(s), 3.00s mean",
        "server out of rotation: http://b: down"]


def test_the_cost_line_says_what_a_task_and_a_fix_cost_and_summary_md_says_the_same():
    from pytest_humanfix.reporting.files import markdown

    summary = summary_of([
        record("a", tokens={"prompt": 900, "completion": 100}, replies=2, sandbox_runs=2,
               seconds=3.0),
        record("b", "unfixed", tokens={"prompt": 1800, "completion": 200}, replies=4,
               sandbox_runs=3, seconds=5.0)])
    line = ("cost per task: 1,500 tokens (1,350 prompt, 150 completion), 3.0 replies, 2.5 sandbox "
            "runs, 4.0 s; per fixed task: 3,000 tokens (2,700 prompt, 300 completion), 6.0 "
            "replies, 5.0 sandbox runs, 8.0 s")
    assert line in terminal.detail_lines(summary)
    assert line.removeprefix("cost ") in markdown(summary)
    assert terminal.cost_text(summary_of([record("a", "unfixed")])["cost"]).endswith(
        "per fixed task: no task fixed")


def test_a_servers_limit_met_by_every_worker_is_one_line():
    line = "the server at http://a takes at most 4 stop strings: ..."
    summary = summary_of([record("a", worker="gw0", server_limits=[line]),
                          record("b", worker="gw1", server_limits=[line]), record("c")])
    assert terminal.server_lines(summary) == [f"server limit: {line}"]
