"""--humanfix-shard K/N and `humanfix-report merge`: shards are a disjoint, balanced deal of the
selection; merged, they give the summary of one unsharded run; a merge refuses what is not one
whole run, naming the shard and the task."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_reports import replay_lines

from pytest_humanfix.dataset import deal, load_tasks
from pytest_humanfix.reporting.cli import main as report_main

# What differs between a merge and one run of the same work: when things ran, and where.
TIMED_RUN_KEYS = ("started_at", "ended_at", "wall_seconds", "run_ids", "merged")
TIMED_KEYS = ("seconds", "slowest")


def comparable(summary: dict) -> dict:
    """The summary without its times (and the run ids and shard files they come with)."""
    rest = {k: v for k, v in summary.items() if k not in TIMED_KEYS}
    rest["run"] = {k: v for k, v in summary["run"].items() if k not in TIMED_RUN_KEYS}
    # The cost's seconds are times too; its tokens, replies and sandbox runs must agree.
    rest["cost"] = {k: {name: figure for name, figure in v.items() if name != "seconds"}
                    if isinstance(v, dict) else v for k, v in summary["cost"].items()}
    return rest


def run_subprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def run_shards(pytester: pytest.Pytester, count: int, *args: str) -> list[Path]:
    """Each shard as its own pytest process, each writing its own JSONL."""
    paths = []
    for index in range(1, count + 1):
        path = pytester.path / f"shard-{index}.jsonl"
        run_subprocess(pytester, *args, f"--humanfix-shard={index}/{count}",
                       f"--humanfix-jsonl={path}",
                       f"--humanfix-report-dir={pytester.path / f'reports-{index}'}")
        paths.append(path)
    return paths


def merged_beside_single(pytester: pytest.Pytester, out: Path, *args: str) -> dict:
    """Runs `args` once whole and once as two shards merged into `out`; the merged summary,
    after checking that it equals the whole run's but for its times."""
    run_subprocess(pytester, *args, "--humanfix-jsonl=single.jsonl")
    single = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert report_main(["merge", *map(str, run_shards(pytester, 2, *args)),
                        "--out", str(out)]) == 0
    merged = json.loads((out / "summary.json").read_text())
    assert comparable(merged) == comparable(single)
    return merged


def records_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_shards_are_a_disjoint_balanced_deal_of_the_selection(dataset):
    tasks = load_tasks(str(dataset))
    for count in (2, 3, 7):
        shards = [deal(tasks, index, count) for index in range(1, count + 1)]
        ids = [task.task_id for shard in shards for task in shard]
        assert sorted(ids) == sorted(task.task_id for task in tasks)  # the union, once each
        assert max(map(len, shards)) - min(map(len, shards)) <= 1
        for bug_type in {task.bug_type for task in tasks}:
            shares = [sum(task.bug_type == bug_type for task in shard) for shard in shards]
            assert max(shares) - min(shares) <= 1, (count, bug_type, shares)
        for shard in shards:  # dataset order within a shard
            assert [t.number for t in shard] == sorted(t.number for t in shard)
    # A deal of a selection depends on the selection only.
    assert deal(tasks[:10], 1, 2) == deal(list(tasks[:10]), 1, 2)


def test_a_shard_runs_its_deal_whatever_the_worker_count(humanfix_pytester, dataset):
    args = ("--humanfix-model=canonical", "--humanfix-max=6", "--humanfix-shard=2/3")
    run_subprocess(humanfix_pytester, *args, "--humanfix-jsonl=one.jsonl")
    run_subprocess(humanfix_pytester, *args, "-n", "2", "--humanfix-jsonl=two.jsonl")
    expected = [t.task_id for t in deal(load_tasks(str(dataset))[:6], 2, 3)]
    for name in ("one.jsonl", "two.jsonl"):
        records = records_of(humanfix_pytester.path / name)
        assert sorted(r["task_id"] for r in records) == sorted(expected), name
        for record in records:
            assert record["shard"]["index"] == 2 and record["shard"]["count"] == 3
            assert record["shard"]["tasks"] == expected and record["shard"]["selected"] == 6
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["run"]["shard"] == {"index": 2, "count": 3, "selected": 6, "tasks": 2}


@pytest.mark.parametrize("model", ["canonical", "buggy"])
def test_merged_shards_give_the_summary_of_one_run(humanfix_pytester, model, tmp_path, capsys):
    args = (f"--humanfix-model={model}", "--humanfix-max=8")
    run_subprocess(humanfix_pytester, *args, "--humanfix-jsonl=single.jsonl")
    single = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    shards = run_shards(humanfix_pytester, 2, *args)
    out = tmp_path / "merged"
    assert report_main(["merge", *map(str, shards), "--out", str(out)]) == 0
    merged = json.loads((out / "summary.json").read_text())
    assert comparable(merged) == comparable(single)
    assert merged["run"]["shard"] is None and single["run"]["shard"] is None
    assert [(m["index"], m["tasks"]) for m in merged["run"]["merged"]] == [(1, 4), (2, 4)]
    merged_records = records_of(out / "humanfix.jsonl")
    single_records = records_of(humanfix_pytester.path / "single.jsonl")
    assert [r["task_id"] for r in merged_records] == [r["task_id"] for r in single_records]
    # junit.xml, rebuilt from the records, says what the run's own says.
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "8"
    assert suite.get("failures") == ("8" if model == "buggy" else "0")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["humanfix_fixed"] == str(single["tasks"]["fixed"])
    assert len(suite.findall("testcase")) == 8
    assert f"merged 2 shard(s), 8 task(s) into {out / 'humanfix.jsonl'}" in capsys.readouterr().out


def test_merged_shards_of_mixed_samples_give_the_summary_of_one_run(humanfix_pytester, dataset,
                                                                     tmp_path):
    replay = tmp_path / "replay.jsonl"
    plan = {"Python/0": "cb", "Python/1": "bb", "Python/2": "bc", "Python/3": "cc",
            "Python/4": "cb", "Python/5": "bc"}
    replay.write_text(replay_lines(dataset, plan))
    args = (f"--humanfix-model=replay:{replay}", "--humanfix-max=6", "--humanfix-samples=2",
            "--humanfix-temperature=0.8")
    merged = merged_beside_single(humanfix_pytester, tmp_path / "merged", *args)
    # Mixed indeed: three first samples fixed; pass@1 (1 + 0 + 1 + 2 + 1 + 1) / 12.
    assert merged["tasks"]["fixed"] == 3
    assert merged["pass_at_k"]["1"] == pytest.approx(6 / 12)


def test_gates_judge_the_merge(humanfix_pytester, tmp_path, capsys):
    args = ("--humanfix-model=buggy", "--humanfix-max=6")
    run_subprocess(humanfix_pytester, "--humanfix-model=canonical", "--humanfix-max=6",
                   "--humanfix-jsonl=good.jsonl")
    shards = list(map(str, run_shards(humanfix_pytester, 2, *args)))
    out = tmp_path / "gated"
    good = str(humanfix_pytester.path / "good.jsonl")
    assert report_main(["merge", *shards, "--out", str(out), "--baseline", good]) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"]["regressions"] == [f"Python/{n}" for n in range(6)]
    assert capsys.readouterr().out.splitlines()[-1].startswith("humanfix gate FAILED: 6 "
                                                                "regression(s)")
    # Under a gate, an unfixed task is an expected failure, as in a gated run's own JUnit file;
    # the failed gate is the one failed case, so the count agrees with the exit status.
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("skipped")) == ("1", "6")
    [failed] = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failed.get("classname") == "humanfix" and failed.get("name") == "gates"
    assert report_main(["merge", *shards, "--out", str(out), "--fail-under=0"]) == 0


def refusal(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert report_main(["merge", *args]) == 2
    return capsys.readouterr().err.strip()


def test_merge_refuses_what_is_not_one_whole_run(humanfix_pytester, tmp_path, capsys):
    args = ("--humanfix-model=canonical", "--humanfix-max=4")
    first, second = run_shards(humanfix_pytester, 2, *args)
    first_ids = records_of(first)[0]["shard"]["tasks"]
    second_ids = records_of(second)[0]["shard"]["tasks"]
    out = str(tmp_path / "out")

    other = humanfix_pytester.path / "other-protocol.jsonl"
    # The agent named, so that the rounds alone differ.
    run_subprocess(humanfix_pytester, *args, "--humanfix-iters=1", "--humanfix-agent=repair",
                   "--humanfix-shard=2/2", f"--humanfix-jsonl={other}")
    assert refusal(capsys, str(first), str(other), "--out", out) == (
        f"humanfix-report: shard 2/2 ({other}), task {second_ids[0]}: made under another model, "
        f"protocol or dataset than shard 1/2 ({first}) (iters: 1 there, 0 here; round_temperature: "
        "[1.0] there, None here; ask_again_temperature: [1.2] there, None here); merge only the "
        "shards of one run, made with the same --humanfix-iters, --humanfix-round-temperature, "
        "--humanfix-ask-again-temperature.")

    assert refusal(capsys, str(first), str(first), "--out", out) == (
        f"humanfix-report: task {first_ids[0]} is given twice: in shard 1/2 ({first}) and in "
        f"shard 1/2 ({first}); pass each shard's results once.")

    torn = tmp_path / "unfinished.jsonl"
    torn.write_text(second.read_text().splitlines(keepends=True)[0])
    assert refusal(capsys, str(first), str(torn), "--out", out) == (
        f"humanfix-report: shard 2/2 ({torn}): task {second_ids[1]} has no record; the shard did "
        "not finish: rerun it with --humanfix-shard 2/2 --humanfix-resume.")

    assert refusal(capsys, str(first), "--out", out) == (
        "humanfix-report: shard 2/2 is missing: no file given holds it; run it with "
        "--humanfix-shard 2/2.")

    unsharded = humanfix_pytester.path / "unsharded.jsonl"
    run_subprocess(humanfix_pytester, *args, f"--humanfix-jsonl={unsharded}")
    assert refusal(capsys, str(unsharded), "--out", out) == (
        f"humanfix-report: {unsharded}: the record of Python/0 has no shard; merge takes the "
        "results of runs with --humanfix-shard K/N.")
    assert not (tmp_path / "out" / "humanfix.jsonl").exists()


@pytest.mark.parametrize(("value", "problem"), [
    ("3/2", "'3/2' must have 1 <= K <= N"),
    ("0/2", "'0/2' must have 1 <= K <= N"),
    ("2", "'2' must be K/N, e.g. 1/4 (shard K of N)"),
    ("1/9", "--humanfix-shard 1/9: the selection has only 4 task(s); use at most 4 shards."),
])
def test_bad_shards_are_usage_errors(humanfix_pytester, value, problem):
    result = humanfix_pytester.runpytest("--humanfix-model=canonical", "--humanfix-max=4",
                                         f"--humanfix-shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert problem in result.stderr.str()

