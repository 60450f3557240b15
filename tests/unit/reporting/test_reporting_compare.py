"""`humanfix-report compare` on constructed runs: each wins where its fixes cost less, the
matched-cost rows find the round where one run's spend reaches the other's, and runs that do
not compare are refused with the reason."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from reporting_records import record

from pytest_humanfix.reporting import compare
from pytest_humanfix.reporting.cli import main
from pytest_humanfix.reporting.stats import mcnemar_exact

PROTOCOL = {"variant": "tests", "iters": 3, "samples": 1, "temperature": 0.0,
            "max_new_tokens": 512, "timeout": 10.0, "prompt": "auto", "strict": False,
            "language": "python", "round_temperature": [1.0], "ask_again_temperature": [1.2]}


def attempt(round: int, tokens: int, seconds: float = 1.0) -> dict[str, Any]:
    return {"round": round, "prompt_tokens": tokens - 10, "completion_tokens": 10,
            "generate_seconds": seconds, "execute_seconds": 0.0}


def run(agent: str, fixed_in: dict[str, int | None], tokens: list[int],
        **protocol: Any) -> list[dict]:
    """A run over tasks t0..: a task fixed in round k made k + 1 attempts, one left unfixed
    made 4; round k's reply cost tokens[k]."""
    records = []
    for task, made in fixed_in.items():
        attempts = [attempt(k, tokens[k]) for k in range(4 if made is None else made + 1)]
        records.append(record(
            task, "unfixed" if made is None else "fixed", fixed_round=made, attempts=attempts,
            tokens={"prompt": sum(a["prompt_tokens"] for a in attempts),
                    "completion": sum(a["completion_tokens"] for a in attempts)},
            replies=len(attempts), sandbox_runs=len(attempts), seconds=float(len(attempts)),
            model="qwen-coder", dataset_hash="abc",
            protocol={**PROTOCOL, **({"agent": agent} if agent != "repair" else {}),
                      **protocol}))
    return records


TASKS = [f"t{n}" for n in range(8)]


def test_sampling_wins_where_its_rounds_are_cheaper_and_fix_more():
    # Repair's rounds carry the conversation: each costs more than the last.
    repair = run("repair", dict(zip(TASKS, [0, 0, 1, None, None, None, None, None])),
                 [100, 300, 500, 700])
    resample = run("resample", dict(zip(TASKS, [0, 0, 1, 1, 2, 3, None, None])),
                   [100, 100, 100, 100])
    compared = compare.side_by_side(repair, resample, ("repair", "resample"))
    assert [p["fixed"] for p in compared["runs"][0]["curve"]] == [2, 3, 3, 3]
    assert [p["fixed"] for p in compared["runs"][1]["curve"]] == [2, 4, 5, 6]
    assert compared["only_first"] == [] and compared["only_second"] == ["t3", "t4", "t5"]
    assert compared["p_value"] == mcnemar_exact(0, 3, "two-sided") == 0.25
    by = {(row["measure"], row["run"]): row for row in compared["matched"]}
    # Repair spent 2*100 + 400 + 5*1600 = 8,600 tokens; resampling never spends as much
    # (2*100 + 2*200 + 300 + 400 + 2*400 = 2,100), and fixes 6 for it.
    tokens = by["tokens", "resample"]
    assert (tokens["fixed"], tokens["spent"], tokens["reached"]) == (6, 2100, False)
    assert (tokens["other_fixed"], tokens["other_spent"]) == (3, 8600)
    # Repair reaches resampling's whole spend within round 1 (2*100 + 6*400 = 2,600).
    assert by["tokens", "repair"]["round"] == 1 and by["tokens", "repair"]["fixed"] == 3
    assert compared["runs"][1]["cost"]["per_fix"]["tokens"] < \
        compared["runs"][0]["cost"]["per_fix"]["tokens"]


def test_repair_wins_where_its_feedback_fixes_what_samples_do_not():
    repair = run("repair", dict(zip(TASKS, [0, 0, 1, 1, 1, 2, 2, None])), [100, 200, 300, 400])
    resample = run("resample", dict(zip(TASKS, [0, 0, None, None, None, None, None, 3])),
                   [100, 100, 100, 100])
    compared = compare.side_by_side(resample, repair, ("resample", "repair"))
    assert compared["only_second"] == ["t2", "t3", "t4", "t5", "t6"]
    assert compared["only_first"] == ["t7"]
    assert compared["p_value"] == pytest.approx(mcnemar_exact(1, 5, "two-sided"))
    by = {(row["measure"], row["run"]): row for row in compared["matched"]}
    # Resampling spends 2*100 + 6*400 = 2,600; repair reaches it within round 2 (2*100 +
    # 3*300 + 3*600 = 2,900) and has fixed 7 by then, against resampling's 3.
    row = by["tokens", "repair"]
    assert (row["round"], row["fixed"], row["other_fixed"], row["reached"]) == (2, 7, 3, True)
    assert by["seconds", "repair"]["fixed"] == 7


@pytest.mark.parametrize("change, reason", [
    (lambda records: records[:-1], "other tasks"),
    (lambda records: [{**r, "dataset_hash": "other"} for r in records], "dataset_hash"),
    (lambda records: [{**r, "model": "qwen-coder-1.5b"} for r in records], "model"),
    (lambda records: [{**r, "protocol": {**r["protocol"], "variant": "docs"}}
                      for r in records], "variant: 'docs' there, 'tests' here"),
    (lambda records: [{**r, "n": 4} for r in records], "several samples"),
])
def test_runs_that_do_not_compare_are_refused_with_the_reason(change, reason):
    repair = run("repair", dict(zip(TASKS, [0, 1, None, None, None, None, None, None])),
                 [100] * 4)
    other = change(run("resample", dict(zip(TASKS, [0] * 8)), [100] * 4))
    with pytest.raises(compare.CompareError, match=reason):
        compare.side_by_side(repair, other)


def test_the_agent_its_rounds_and_temperatures_may_differ():
    repair = run("repair", {"t0": 0}, [100] * 4)
    other = run("resample", {"t0": None}, [100] * 4, iters=5, round_temperature=[0.8])
    assert compare.side_by_side(repair, other)["only_first"] == ["t0"]


def write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_command_writes_the_table_the_json_and_the_chart(tmp_path, capsys):
    write(tmp_path / "a.jsonl", run("repair", dict(zip(TASKS, [0, 1] + [None] * 6)), [100] * 4))
    write(tmp_path / "b.jsonl", run("resample", dict(zip(TASKS, [0, 2, 3] + [None] * 5)),
                                    [100] * 4))
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                 "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out
    assert "| a.jsonl (repair, 3 rounds) | 2/8 |" in said
    assert "| b.jsonl (resample, 3 rounds) | 3/8 |" in said
    assert "p = 1." in said  # t2 only: one discordant task tells nothing
    saved = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert saved["only_second"] == ["t2"]
    svg = ET.parse(tmp_path / "out" / "compare.svg").getroot()
    circles = [c for c in svg.iter("{http://www.w3.org/2000/svg}circle")]
    assert [c.get("data-fixed") for c in circles] == ["1", "2", "2", "2", "1", "1", "2", "3"]


def test_the_command_refuses_runs_that_do_not_compare(tmp_path, capsys):
    write(tmp_path / "a.jsonl", run("repair", {"t0": 0, "t1": 1}, [100] * 4))
    write(tmp_path / "b.jsonl", run("resample", {"t0": 0}, [100] * 4))
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                 "--out", str(tmp_path / "out")]) == 2
    assert "do not compare: the runs are of other tasks (1 in one only: t1)" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_baseline_of_another_agent_puts_the_two_side_by_side_in_the_summary():
    from pytest_humanfix.reporting.files import markdown
    from pytest_humanfix.reporting.summary import build, times_from_records

    baseline = run("repair", dict(zip(TASKS, [0, 1] + [None] * 6)), [100] * 4)
    now = run("resample", dict(zip(TASKS[:4], [0, 2, 3, None])), [100] * 4)
    summary = build(now, times_from_records([]), baseline=baseline)
    agents = summary["agents"]
    # Over this run's four tasks: the baseline's other tasks are left out.
    assert agents["tasks"] == 4 and agents["only_second"] == ["t2"]
    assert [one["label"] for one in agents["runs"]] == ["baseline", "this run"]
    assert "## Against the baseline's agent at equal cost" in markdown(summary)
    same_agent = run("resample", dict(zip(TASKS, [0] * 8)), [100] * 4)
    assert build(now, times_from_records([]), baseline=same_agent)["agents"] is None
    assert build(now, times_from_records([]))["agents"] is None


def test_every_point_of_the_chart_lies_inside_its_frame():
    # 8,600 tokens: the last round tick (8,000) falls short of the largest spend.
    compared = compare.side_by_side(
        run("repair", dict(zip(TASKS, [0, 0, 1] + [None] * 5)), [100, 300, 500, 700]),
        run("resample", dict(zip(TASKS, [0] * 8)), [100] * 4))
    svg = ET.fromstring(compare.render(compared))
    frame = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect") if r.get("stroke")][0]
    left, top = float(frame.get("x")), float(frame.get("y"))
    right, bottom = left + float(frame.get("width")), top + float(frame.get("height"))
    for circle in svg.iter("{http://www.w3.org/2000/svg}circle"):
        assert left <= float(circle.get("cx")) <= right
        assert top <= float(circle.get("cy")) <= bottom


def test_a_task_one_run_errs_on_counts_as_not_fixed_in_that_run():
    first = run("repair", dict(zip(TASKS[:4], [0, 0, 1, None])), [100] * 4)
    second = run("resample", dict(zip(TASKS[:4], [0, 0, None, None])), [100] * 4)
    # t1: fixed in both runs, but a harness error ended it in the second: a fix only the first
    # run has, as pass@1 scores the error not fixed.
    second[1] = {**second[1], "outcome": "error", "error": "worker crashed"}
    compared = compare.side_by_side(first, second)
    assert compared["tasks"] == 4
    assert compared["only_first"] == ["t1", "t2"] and compared["only_second"] == []
    assert (compared["both_fixed"], compared["neither"]) == (1, 1)
    assert compared["p_value"] == mcnemar_exact(2, 0, "two-sided")
    assert [one["curve"][-1]["fixed"] for one in compared["runs"]] == [3, 1]
    table = compare.lines(compared)
    assert table[0] == "Tasks: all tasks of both runs, 4 scored by both."
    assert table[4].startswith("| A (repair, 3 rounds) | 3/4 |")
    assert table[5].startswith("| B (resample, 3 rounds) | 1/4 |")


def test_the_table_and_the_matched_rows_name_their_seconds_apart():
    compared = compare.side_by_side(run("repair", {"t0": 0}, [100] * 4),
                                    run("resample", {"t0": None}, [100] * 4))
    text = "\n".join(compare.lines(compared))
    assert "| wall seconds | tokens per fix | wall seconds per fix |" in text
    assert "- generation and execution seconds: B within" in text
    assert "- seconds:" not in text


def numbered(records: list[dict]) -> list[dict]:
    """The constructed run's tasks t0.. as dataset ids, Python/0.., whose numbers pick halves."""
    return [{**r, "task_id": f"Python/{r['task_id'][1:]}"} for r in records]


def test_each_half_is_compared_alone_and_says_which_it_is(tmp_path, capsys):
    # Repair fixes the even tasks 0, 2 and 4 and resampling only 0; on the odd tasks,
    # resampling fixes 1, 3, 5 and 7 and repair only 1: each half has its own winner.
    write(tmp_path / "a.jsonl", numbered(run("repair", dict(zip(
        TASKS, [0, 0, 1, None, 2, None, None, None])), [100] * 4)))
    write(tmp_path / "b.jsonl", numbered(run("resample", dict(zip(
        TASKS, [0, 0, None, 1, None, 2, None, 3])), [100] * 4)))
    said = {}
    for half in ("even", "odd"):
        assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                     "--tasks", half, "--out", str(tmp_path / half)]) == 0
        said[half] = capsys.readouterr().out
        saved = json.loads((tmp_path / half / "compare.json").read_text())
        assert saved["tasks"] == 4 and saved["selection"] == f"the {half}-numbered tasks"
        assert said[half].startswith(f"Tasks: the {half}-numbered tasks, 4 scored by both.")
        said[half] = saved
    assert (said["even"]["only_first"], said["even"]["only_second"]) == (
        ["Python/2", "Python/4"], [])
    assert (said["odd"]["only_first"], said["odd"]["only_second"]) == (
        [], ["Python/3", "Python/5", "Python/7"])


def test_runs_under_way_compare_on_the_tasks_both_have_finished(tmp_path, capsys):
    write(tmp_path / "a.jsonl", run("repair", dict(zip(TASKS, [0, 1] + [None] * 6)), [100] * 4))
    write(tmp_path / "b.jsonl", run("resample", dict(zip(TASKS[:3], [0, None, 2])), [100] * 4))
    arguments = ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                 "--out", str(tmp_path / "out")]
    assert main(arguments) == 2
    assert "compare the tasks both have finished (--common)" in capsys.readouterr().err
    assert main([*arguments, "--common"]) == 0
    saved = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert saved["tasks"] == 3
    assert saved["selection"] == ("the tasks both runs have finished (left out: 5 of the "
                                  "first run's, 0 of the second's)")
    assert (saved["only_first"], saved["only_second"]) == (["t1"], ["t2"])
    # Each run's spend is of the shared tasks alone: the first run's other five are not in it.
    assert saved["runs"][0]["curve"][-1]["replies"] == 1 + 2 + 4


def test_a_selection_that_leaves_a_run_empty_is_refused_with_the_reason(tmp_path, capsys):
    write(tmp_path / "a.jsonl", numbered(run("repair", {"t0": 0, "t2": None}, [100] * 4)))
    write(tmp_path / "b.jsonl", numbered(run("resample", {"t0": 0, "t2": 1}, [100] * 4)))
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                 "--tasks", "odd", "--out", str(tmp_path / "out")]) == 2
    assert "the first run has no task to compare (of those selected)" in \
        capsys.readouterr().err


def test_halves_need_numbered_tasks_and_common_needs_a_shared_one():
    unnumbered = run("repair", {"t0": 0}, [100] * 4)
    mine = [{**r, "task_id": "mine/alpha"} for r in unnumbered]
    with pytest.raises(compare.CompareError, match=r"--tasks odd halves the tasks by the "
                       r"number in their ids, and 1 have none \(mine/alpha\)"):
        compare.selected(mine, mine, "odd")
    first = numbered(run("repair", {"t0": 0, "t2": 1}, [100] * 4))
    second = numbered(run("resample", {"t1": 0, "t3": 1}, [100] * 4))
    with pytest.raises(compare.CompareError, match="the runs have finished no task in common "
                                                   r"\(the first 2, the second 2\)"):
        compare.selected(first, second, common=True)
    both = numbered(run("resample", {"t0": 0, "t1": 0, "t2": None, "t4": 1}, [100] * 4))
    kept, other, said = compare.selected(first, both, "even", common=True)
    assert [r["task_id"] for r in kept] == ["Python/0", "Python/2"]
    assert [r["task_id"] for r in other] == ["Python/0", "Python/2"]
    assert said == ("the even-numbered tasks, the tasks both runs have finished (left out of "
                    "that half: 0 of the first run's, 1 of the second's)")


def test_a_baseline_of_another_agent_is_compared_over_this_runs_tasks_and_says_so():
    baseline = run("repair", dict(zip(TASKS, [0, 1] + [None] * 6)), [100] * 4)
    now = run("resample", dict(zip(TASKS[:4], [0, 2, 3, None])), [100] * 4)
    compared = compare.against_baseline(now, baseline)
    assert compared is not None and compared["selection"] == "this run's tasks"
    assert compare.lines(compared)[0] == "Tasks: this run's tasks, 4 scored by both."


def test_the_tasks_only_one_run_fixes_are_listed_in_task_order():
    """Python/30 before Python/138, as the run's own reports order tasks, not as text sorts."""
    ids = ["Python/138", "Python/30", "Python/4", "Python/10", "Python/2"]
    first = run("repair", dict(zip(ids, [1, 1, None, None, 0])), [100] * 4)
    second = run("resample", dict(zip(ids, [None, None, 2, 1, 0])), [100] * 4)
    compared = compare.side_by_side(first, second, ("repair", "resample"))
    assert compared["only_first"] == ["Python/30", "Python/138"]
    assert compared["only_second"] == ["Python/4", "Python/10"]
    other = run("resample", dict(zip(["Python/11", "Python/9"], [0, 0])), [100] * 4)
    refused = compare.refusal(first[:1], other)
    assert refused is not None and "Python/9, Python/11, Python/138" in refused
