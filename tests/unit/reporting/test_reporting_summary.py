"""The one summary (reporting/summary.py) on literal records: its sections as
`reporting/sections.py` types them, and the figures each section holds."""

from __future__ import annotations

import json
import types
import typing

import pytest
from reporting_records import record

from pytest_humanfix.reporting import summary as summary_mod
from pytest_humanfix.reporting.gates import Comparison, GateCheck
from pytest_humanfix.reporting.sections import Summary


def conforms(value: object, hint: object, where: str = "summary") -> list[str]:
    """Where `value` is not what `hint` (a section's type) says: [] when it all is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return []
    if origin in (typing.Union, types.UnionType):
        found = [conforms(value, arg, where) for arg in args]
        return [] if any(not f for f in found) else found[0]
    if hint is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        hints = typing.get_type_hints(hint)
        required = hint.__required_keys__
        problems = [f"{where}.{key}: missing" for key in required if key not in value]
        problems += [f"{where}.{key}: not in the type" for key in value if key not in hints]
        for key, item in value.items():
            if key in hints:
                problems += conforms(item, hints[key], f"{where}.{key}")
        return problems
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not an array"]
        return [p for n, item in enumerate(value) for p in conforms(item, args[0], f"{where}[{n}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        return [p for key, item in value.items() for p in conforms(item, args[1], f"{where}.{key}")]
    kinds = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}[hint]
    wrong = not isinstance(value, kinds) or (hint is not bool and isinstance(value, bool))
    return [f"{where}: {value!r} is not {hint}"] if wrong else []


def varied_records():
    """Records that fill every section: rounds, samples, HumanEval+, a repeat check, servers,
    errors, an item timeout, a known failure, flags and a shard."""
    protocol = {"iters": 1, "tests": "plus", "language": "python"}
    shard = {"index": 1, "count": 2, "selected": 4, "tasks": ["Python/0", "Python/1"]}
    attempts = [{"round": 0, "status": "failed", "server": "http://a", "generate_seconds": 2.0},
                {"round": 1, "status": "repeat", "server": "http://b", "generate_seconds": 1.0}]
    common = {"protocol": protocol, "shard": shard, "model": "m", "run_id": "r",
              "tokens": {"prompt": 10, "completion": 4}, "seconds": 1.5,
              "computed_by": {"engine": "e"}, "verdict": {"status": "timeout", "rerun": True}}
    return [
        record("Python/0", "fixed", fixed_round=1, plus_outcome="unfixed", flags=["f"],
               attempts=attempts, repeat_check={"engine": "e", "reply_differs": True,
                                                "outcome_flipped": True}, **common),
        record("Python/1", "unfixed", n=2, n_fixed=1, plus_outcome="unfixed",
               samples=[{"outcome": "unfixed"}, {"outcome": "fixed", "fixed_round": 0}],
               servers_out=[{"base_url": "http://b", "reason": "down"}],
               repeat_check={"error": "no reply"}, **common),
        record("Python/2", "error", error="boom", **common),
        record("Python/3", "error", item_timeout=True, error="item timeout fired", **common),
        record("Python/4", "unfixed", "missing logic", known_failure="toolchain", **common),
    ]


def test_every_section_is_what_its_type_says():
    records = varied_records()
    selection = {"selected": [r["task_id"] for r in records] + ["Python/9"],
                 "not_run": {"Python/9": "deselected by -k"}}
    comparison = Comparison(regressions=["Python/1"], both_fixed=1)
    facts = {**summary_mod.times_from_records(records), "serve": {"engine": "vllm"}}
    built = summary_mod.build(records, facts, comparison, selection)
    summary_mod.attach_gates(built, [GateCheck("fail-under", False, "low")])
    for key in ("plus", "repairs", "repeat_check", "baseline"):
        assert built[key] is not None, key
    assert conforms(json.loads(json.dumps(built)), Summary) == []
    assert list(built) == list(typing.get_type_hints(Summary))


def test_an_empty_run_conforms_too():
    built = summary_mod.build([], summary_mod.times_from_records([]))
    assert conforms(built, Summary) == []
    assert built["pass_at_1"] == {"value": 0.0, "ci95": [0.0, 1.0], "tasks": 0}
    assert built["samples"] == 1 and built["pass_at_k"] == {"1": None}


def test_the_summary_of_one_fixed_task():
    built = summary_mod.build([record("Python/0", seconds=2.0,
                                      tokens={"prompt": 3, "completion": 1})],
                              {"started_at": None, "ended_at": None, "wall_seconds": None})
    assert built["tasks"] == {"total": 1, "scored": 1, "errors": 0, "item_timeouts": 0,
                              "retried": 0, "fixed": 1, "unfixed": 0, "agent_errors": 0, "flagged": 0,
                              "known_failures": 0}
    assert built["tokens"] == {"prompt": 3, "completion": 1, "total": 4,
                               "per_task": {"mean": 4.0, "median": 4.0, "max": 4.0}}
    assert built["seconds"] == {"total": 2.0,
                                "per_task": {"mean": 2.0, "median": 2.0, "max": 2.0}}
    assert built["slowest"] == [{"task_id": "Python/0", "seconds": 2.0}]
    assert built["by_bug_type"][0]["bug_type"] == "value misuse"
    assert built["by_language"][0]["language"] == "python"
    assert (built["plus"], built["repairs"], built["repeat_check"], built["baseline"]) == \
        (None, None, None, None)
    assert (built["gates"], built["gate_failed"]) == ([], False)


def test_the_runs_facts_win_over_the_records_in_place_and_extras_come_last():
    records = [record("a", model="from-record", protocol={"iters": 0},
                      shard={"index": 2, "count": 3, "selected": 9, "tasks": ["a", "b"]})]
    times = {"started_at": "s", "ended_at": "e", "wall_seconds": 1.0}
    section = summary_mod.run_section(records, {"model": "given", **times})
    assert section["model"] == "given" and section["protocol"] == {"iters": 0}
    assert section["shard"] == {"index": 2, "count": 3, "selected": 9, "tasks": 2}
    assert list(section)[:8] == ["model", "protocol", "dataset", "dataset_hash", "shard",
                                 "run_ids", "computed_by", "versions"]
    assert "serve" not in section and "merged" not in section
    merged = [{"file": "x", "index": 1, "count": 1, "tasks": 1, "run_ids": []}]
    section = summary_mod.run_section(records, {**times, "shard": None, "merged": merged})
    assert section["shard"] is None and list(section)[-1] == "merged"


def test_coverage_groups_the_tasks_not_run_by_reason():
    records = [record("a")]
    selection = {"selected": ["a", "b", "c", "d"],
                 "not_run": {"b": "deselected by -k", "c": "interrupted",
                             "d": "deselected by -k"}}
    covered = summary_mod.coverage(records, selection)
    assert (covered["selected"], covered["run"], covered["not_run"], covered["subset"]) == \
        (4, 1, 3, True)
    assert covered["why"] == ["2 deselected by -k", "1 interrupted"]
    assert covered["not_run_tasks"] == {"deselected by -k": ["b", "d"], "interrupted": ["c"]}
    assert summary_mod.coverage(records, None)["subset"] is False


def test_repairs_count_repeated_replies_and_rounds_that_ended_on_one():
    attempts = [{"round": 0, "status": "failed"}, {"round": 1, "status": "repeat"},
                {"round": 1, "status": "failed"}, {"round": 2, "status": "repeat"}]
    repaired = summary_mod.repairs([record("a", "unfixed", attempts=attempts)])
    assert repaired == {"replies": 3, "repeated": 2, "repeat_rate": pytest.approx(2 / 3),
                        "rounds": 2, "wasted_rounds": 1, "wasted_rate": 0.5}
    assert summary_mod.repairs([record("a", attempts=[{"round": 0}])]) is None


def test_servers_timeouts_and_computations_are_gathered_over_the_records():
    records = varied_records()
    assert summary_mod.servers(records) == {
        "http://a": {"requests": 1, "seconds": {"mean": 2.0, "median": 2.0, "max": 2.0}},
        "http://b": {"requests": 1, "seconds": {"mean": 1.0, "median": 1.0, "max": 1.0}}}
    assert summary_mod.servers_out(records) == [{"base_url": "http://b", "reason": "down"}]
    assert summary_mod.timeouts(records) == {"timed_out": 5, "rerun": 5, "rerun_finished": 0,
                                             "lost": 0, "largest_limit": None}
    mixed = [record("a", computed_by={"engine": "x"}), record("b", computed_by={"engine": "x"}),
             record("c")]
    assert [entry["tasks"] for entry in summary_mod.computations(mixed)] == [2, 1]


def test_the_repeat_check_counts_flips_over_the_compared_tasks():
    figures = summary_mod.repeat_check(varied_records(), tasks=10, alpha=0.05)
    assert figures is not None
    assert figures["tasks"] == 1 and figures["flipped_tasks"] == ["Python/0"]
    assert figures["errors"] == [{"task_id": "Python/1", "error": "no reply"}]
    assert figures["outcomes_flipped"]["count"] == 1 and figures["outcomes_flipped"]["of"] == 1
    assert figures["detectable_drop"]["tasks"] == 10
    assert summary_mod.repeat_check([record("a")], tasks=1, alpha=0.05) is None


def test_gates_attached_say_whether_one_failed():
    built = summary_mod.build([record("a")], summary_mod.times_from_records([]))
    summary_mod.attach_gates(built, [GateCheck("fail-under", True, "held")])
    assert built["gates"] == [{"name": "fail-under", "passed": True, "reason": "held"}]
    assert built["gate_failed"] is False
    summary_mod.attach_gates(built, [GateCheck("baseline", False, "dropped")])
    assert built["gate_failed"] is True


def test_computed_by_text_joins_several_computations_with_their_counts():
    built = summary_mod.build([record("a", computed_by={"engine": "x"}), record("b")],
                              summary_mod.times_from_records([]))
    assert "(1 tasks)" in summary_mod.computed_by_text(built)
    built["run"]["computed_by"] = []
    assert summary_mod.computed_by_text(built) == "not recorded"


def test_times_from_records_span_the_first_start_to_the_last_end():
    records = [record("a", finished_at="2024-01-01T00:00:10+0000", seconds=4),
               record("b", finished_at="2024-01-01T00:00:20+0000", seconds=2),
               record("c", finished_at="not a time")]
    times = summary_mod.times_from_records(records)
    assert times["started_at"] == "2024-01-01T00:00:06+00:00"
    assert times["ended_at"] == "2024-01-01T00:00:20+00:00"
    assert times["wall_seconds"] == 14.0
    assert summary_mod.times_from_records([record("a")])["wall_seconds"] is None
