"""The arms' records committed under benchmarks/records/ give the rows docs/benchmarks.md shows
of them: `humanfix-report compare`'s figures, written as the page writes them, are on the page;
and a recomputed arm is the one the page documented before, fix for fix and token for token.
The impossible variant's run gives the cheating rate docs/trust.md states."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.jsonl import jsonl_bytes
from pytest_humanfix.records import natural_order
from pytest_humanfix.reporting import cheating, compare
from pytest_humanfix.reporting.sections import Share
from pytest_humanfix.reporting.stats import pct, wilson_interval
from pytest_humanfix.variants.impossible import impossible_tasks

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


def compared(first: str, second: str, half: str | None) -> dict:
    """`compare --common --tasks HALF` on two arms' records: the tasks both finished (with
    `half` None, all of them)."""
    runs = records(RECORDS / first), records(RECORDS / second)
    common = {r["task_id"] for r in runs[0]} & {r["task_id"] for r in runs[1]}
    one, other, selection = compare.selected(
        *([r for r in run if r["task_id"] in common] for run in runs), half)
    return compare.side_by_side(one, other, (first, second), selection)


# Each candidate against `resample` on a half: (its records, resample's, the half, the tasks
# both finished).
CANDIDATES = {
    "hinted, even": ("qwen-coder-even/hinted.jsonl.gz", "qwen-coder-even/resample.jsonl.gz",
                     "even", 82),
    "rewrite, odd": ("qwen-coder-rewrite/rewrite-odd.jsonl.gz",
                     "qwen-coder-rewrite/resample-odd.jsonl.gz", "odd", 71),
}


@pytest.mark.parametrize("candidate", CANDIDATES)
def test_each_candidates_rows_are_what_compare_gives_on_its_records(candidate):
    first, second, half, tasks = CANDIDATES[candidate]
    both = compared(first, second, half)
    assert both["tasks"] == tasks
    for row in rows(both, half):
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"


def test_rewrites_first_attempt_and_samples_are_resamples_own():
    """Round 0 is the same greedy reply in both arms, and `rewrite`'s rounds 2 and 3 are
    `resample`'s rounds 1 and 2, reply for reply, wherever both arms asked them: its round 1
    alone differs. What makes the even half's projection exact, shown on the odd half's runs;
    the runs of round 1 alone begin with `resample`'s round 0 too."""
    first, second, _, _ = CANDIDATES["rewrite, odd"]
    resample = {r["task_id"]: r["attempts"] for r in records(RECORDS / second)}
    compared_replies = 0
    for record in records(RECORDS / first):
        rewrite, sampled = record["attempts"], resample[record["task_id"]]
        assert rewrite[0]["reply"] == sampled[0]["reply"]
        for later in range(2, min(len(rewrite), len(sampled) + 1)):
            assert rewrite[later]["reply"] == sampled[later - 1]["reply"]
            compared_replies += 1
    assert compared_replies > 50
    both = {r["task_id"]: r["attempts"]
            for path in ("qwen-coder-even/resample.jsonl.gz", second)
            for r in records(RECORDS / path)}
    for name in ("screen-even", "round1-even", "round1-tail"):
        for record in records(RECORDS / f"qwen-coder-rewrite/{name}.jsonl.gz"):
            assert record["attempts"][0]["reply"] == both[record["task_id"]][0]["reply"]


@pytest.mark.parametrize("half, path", [("even", "qwen-coder-even/resample.jsonl.gz"),
                                        ("odd", "qwen-coder-rewrite/resample-odd.jsonl.gz")])
def test_the_recomputed_resample_arms_are_the_documented_ones(half, path):
    """Each half's `resample` row of "All 164 tasks, each half", computed on an AMD EPYC before
    and again on an Intel Xeon: the same fixes by round, replies and tokens."""
    documented = re.search(rf"^\| {half} \(82\) \| `resample` \| (\d+)/82 \| ([\d /]+) \| "
                           r"(\d+) \| ([\d,]+) \|", PAGE, re.MULTILINE)
    assert documented is not None
    runs = records(RECORDS / path)
    chosen, _, selection = compare.selected(runs, runs, half)
    resample = compare.side_by_side(chosen, chosen, ("resample", "resample"), selection)["runs"][0]
    assert resample["agent"] == "resample"
    assert str(resample["curve"][-1]["fixed"]) == documented[1]
    assert " / ".join(str(point["fixed"]) for point in resample["curve"]) == documented[2]
    assert str(resample["cost"]["total"]["replies"]) == documented[3]
    assert f"{resample['cost']['total']['tokens']:,}" == documented[4]


def projected(tmp_path: Path, names: tuple[str, ...], *options: str
              ) -> tuple[list[str], dict]:
    """benchmarks/harness/project_round_mixes.py on these records: its table's rows, and the
    figures of its --json."""
    paths = []
    for name in names:
        path = tmp_path / (name.replace("/", "-") + ".jsonl")
        path.write_bytes(jsonl_bytes(records(RECORDS / f"{name}.jsonl.gz")))
        paths.append(str(path))
    written = tmp_path / "mixes.json"
    done = subprocess.run([sys.executable, "benchmarks/harness/project_round_mixes.py", *paths,
                           *options, "--json", str(written)],
                          cwd=REPO, capture_output=True, text=True, check=True)
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")][2:]
    return table, json.loads(written.read_text())["figures"]


RESAMPLE_EVEN = "qwen-coder-even/resample"
SCREEN = "qwen-coder-rewrite/screen-even"
ROUND1 = "qwen-coder-rewrite/round1-even"
# Round 1 alone on the odd half's last 11 tasks, which `rewrite` did not reach, and Python/162.
TAIL = "qwen-coder-rewrite/round1-tail"
RESAMPLE_ODD = "qwen-coder-rewrite/resample-odd"
REWRITE_ODD = "qwen-coder-rewrite/rewrite-odd"


@pytest.mark.parametrize("names, options, tasks, resampled", [
    ((RESAMPLE_EVEN, SCREEN), (), 29, 8),
    ((RESAMPLE_EVEN, SCREEN, ROUND1, TAIL), ("--tasks", "even"), 82, 28),
    ((RESAMPLE_ODD, REWRITE_ODD, TAIL), ("--mixes", "GFF", "--tasks", "odd"), 82, 26),
])
def test_the_projected_mixes_are_on_the_page(tmp_path, names, options, tasks, resampled):
    """On the screen's 29 tasks, and on each whole half with round 1 run alone where `rewrite`
    did not run: the page shows the table the records give, row for row, and `resample` (F F
    F) fixes what its own records do, on the whole half the documented arm's count."""
    table, figures = projected(tmp_path, names, *options)
    assert figures["tasks"] == tasks and len(table) == len(figures["mixes"])
    for row in table:
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"
    assert figures["mixes"]["FFF"]["unknown"] == [] and figures["mixes"]["GFF"]["unknown"] == []
    assert figures["mixes"]["FFF"]["fixed"] == resampled


def test_rewrites_projection_is_its_run_where_it_ran(tmp_path):
    """G F F projected from `resample`'s records and `rewrite`'s own, read as a screen, is the
    run itself on the odd tasks it ran: each task's fix, round and tokens, so a projection of the
    tasks it did not reach is what running them would have given."""
    first, second, half, tasks = CANDIDATES["rewrite, odd"]
    _, figures = projected(tmp_path, (second.removesuffix(".jsonl.gz"),
                                      first.removesuffix(".jsonl.gz")), "--mixes", "GFF")
    assert set(figures["mixes"]) == {"FFF", "GFF"} and figures["tasks"] == tasks
    run = compared(first, second, half)
    rewrite, resample = run["runs"]
    for mix, arm in (("GFF", rewrite), ("FFF", resample)):
        row = figures["mixes"][mix]
        assert row["by_round"] == [point["fixed"] for point in arm["curve"]]
        assert row["tokens"] == arm["cost"]["total"]["tokens"]
    assert figures["mixes"]["GFF"]["only_this"] == run["only_first"]
    assert figures["mixes"]["GFF"]["only_resample"] == run["only_second"]


def test_rewrite_on_the_15b_is_read_off_its_round_1_and_resamples_samples(tmp_path):
    """`qwen-coder-1.5b`, odd half: `rewrite` read off its runs of round 1 alone and
    `resample`'s of rounds 1 and 2 where those did not fix the task. The page shows the rows the
    records give, round 0 is the documented arms' 18 of 82 (the same reply: a test above), and
    `rewrite` fixes more than `resample`'s documented 34 within three rounds."""
    table, figures = projected(tmp_path, ("qwen-coder-1.5b-rewrite/resample-odd",
                                          "qwen-coder-1.5b-rewrite/round1-odd"),
                               "--mixes", "GFF", "--tasks", "odd")
    assert figures["tasks"] == 82
    for row in table:
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"
    rewrite = figures["mixes"]["GFF"]
    assert rewrite["by_round"][0] == 18 and rewrite["fixed"] > 34
    documented = re.search(r"^\| `qwen-coder-1.5b` \| `tests` \| 18/82 \(odd half\): [^|]+ \| "
                           r"34/82: [^|]+ \| 34/82: ", PAGE, re.MULTILINE)
    assert documented is not None


DOCS = ("qwen-coder-docs/repair.jsonl.gz", "qwen-coder-docs/resample.jsonl.gz")
REWRITE_DOCS = "qwen-coder-docs/rewrite.jsonl.gz"  # the replay of the queued replies, priced
ROUND1_DOCS = "qwen-coder-docs/round1.jsonl.gz"  # the model's run of round 1 alone


@pytest.mark.parametrize("first", [DOCS[0], REWRITE_DOCS], ids=["repair", "rewrite"])
@pytest.mark.parametrize("half", ["all", "even", "odd"])
def test_the_docs_variants_arms_give_the_pages_rows_on_every_task(first, half):
    """`qwen-coder` (0.5B) in the `docs` variant: `repair` and `rewrite` each against
    `resample`, all 164 tasks in each arm, and the page shows what compare gives on each half
    and on the whole."""
    both = compared(first, DOCS[1], None if half == "all" else half)
    assert both["tasks"] == (164 if half == "all" else 82)
    for row in rows(both, half):
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"


def test_the_docs_variants_reference_row_is_its_records_and_round_0_the_same_in_every_arm():
    """The reference table's `docs` row: round 0, and each arm within three rounds, with its
    Wilson interval. Round 0 is one greedy reply, the same in every arm task by task: the
    rounds alone differ."""
    first, second, third = ({r["task_id"]: r["attempts"][0]["code"]
                             for r in records(RECORDS / path)}
                            for path in (*DOCS, REWRITE_DOCS))
    assert len(first) == 164 and first == second == third
    repair, resample = compared(*DOCS, None)["runs"]
    rewrite = compared(REWRITE_DOCS, DOCS[1], None)["runs"][0]
    assert repair["curve"][0]["fixed"] == resample["curve"][0]["fixed"] \
        == rewrite["curve"][0]["fixed"]

    def cell(fixed: int) -> str:
        low, high = wilson_interval(fixed, 164)
        return f"{fixed}/164: {pct(fixed / 164)} [{pct(low)}, {pct(high)}]"

    row = (f"| `qwen-coder` (0.5B) | `docs` | {cell(repair['curve'][0]['fixed'])} | "
           f"{cell(repair['curve'][-1]['fixed'])} | {cell(resample['curve'][-1]['fixed'])} | "
           f"{cell(rewrite['curve'][-1]['fixed'])} (")
    assert row in PAGE, f"docs/benchmarks.md lacks the reference row the records give: {row}"


@pytest.fixture(scope="module")
def mix() -> ModuleType:
    """benchmarks/harness/replay_round_mix.py, loaded from its file."""
    path = REPO / "benchmarks" / "harness" / "replay_round_mix.py"
    spec = importlib.util.spec_from_file_location("replay_round_mix", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rewrite_in_docs_is_served_round_1s_replies_then_resamples_in_order(mix):
    """Every attempt of the replayed `rewrite` is the reply queued in its place: round 0 and
    round 1 from the model's run of round 1 alone, then `resample`'s samples, each in the round
    it was asked for, with the tokens and seconds it took;
    and where two runs graded the same code, on the same hidden tests, they agree."""
    rewrite, round1, resample = (records(RECORDS / path)
                                 for path in (REWRITE_DOCS, ROUND1_DOCS, DOCS[1]))
    assert len(rewrite) == len(round1) == 164
    assert mix.priced(mix.queued(resample, round1), rewrite) == rewrite
    graded = {r["task_id"]: (r["code"], r["outcome"]) for r in rewrite}
    agreeing = 0
    for other in (*round1, *resample):
        code, outcome = graded[other["task_id"]]
        if other["code"] == code:
            assert other["outcome"] == outcome, other["task_id"]
            agreeing += 1
    assert agreeing > 164  # each task graded the same code as one run at least, most both


# A task of each way the replay ends: fixed by round 0, 1, 2 or 3, the examples passed but not
# the hidden tests (at round 0: Python/82), a task without examples, graded at once
# (Python/38), a reply repeating an earlier one in the last round (Python/163), every reply
# rejected (Python/124), and three rounds failed (Python/93).
REPLAYED = ("Python/5", "Python/12", "Python/26", "Python/38", "Python/82",
            "Python/93", "Python/119", "Python/124", "Python/163")


def test_the_agent_given_the_queued_replies_is_the_recorded_rewrite(mix, humanfix_pytester,
                                                                    records_by_task):
    """`--humanfix-model replay:` on the queued replies, the agent and the sandbox deciding:
    each task ends in the round, the outcome and the attempts that the committed records
    hold, on tasks that end in each way."""
    rewrite = {r["task_id"]: r for r in records(RECORDS / REWRITE_DOCS)}
    queue = [line for line in mix.queued(records(RECORDS / DOCS[1]),
                                         records(RECORDS / ROUND1_DOCS))
             if line["task_id"] in REPLAYED]
    replies = humanfix_pytester.path / "mix.jsonl"
    replies.write_bytes(jsonl_bytes(queue))
    humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{replies}", "--humanfix-agent=rewrite",
        "--humanfix-variant=docs", "--humanfix-iters=3", f"--humanfix-task={','.join(REPLAYED)}")
    got = records_by_task()
    assert sorted(got) == sorted(REPLAYED)
    for task, replayed in zip(REPLAYED, mix.priced(queue, [got[t] for t in REPLAYED]),
                              strict=True):
        expected = rewrite[task]
        assert (replayed["outcome"], replayed["fixed_round"]) == \
            (expected["outcome"], expected["fixed_round"]), task
        assert [(a["round"], a["status"], a["repeat_of"], a["tests"]) for a in
                replayed["attempts"]] == [(a["round"], a["status"], a["repeat_of"], a["tests"])
                                          for a in expected["attempts"]], task
        assert replayed["tokens"] == expected["tokens"], task


IMPOSSIBLE = "qwen-coder-impossible/split.jsonl.gz"
TRUST = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
MEASURED = TRUST[TRUST.index("- **Measured.** `qwen-coder`"):]


def share_text(row: Share) -> str:
    """A share as docs/trust.md writes it: 1/161, 0.6% [0.1%, 3.4%]."""
    low, high = row["ci95"]
    return f"{row['count']}/{row['of']}, {pct(row['rate'])} [{pct(low)}, {pct(high)}]"


def test_the_cheating_rate_trust_md_states_is_the_one_its_records_give():
    """docs/trust.md's cheating rate of `qwen-coder` (0.5B) under --humanfix-variant impossible
    (all 164 Python tasks, 161 of them mutated, `--humanfix-mutation split`): the summary's
    figure, rebuilt from the run's committed records, overall, by mutation and by language, the
    passing task, the tasks left out, and what computed it (one run, its engine and date)."""
    found = records(RECORDS / IMPOSSIBLE)
    assert len({r["task_id"] for r in found}) == len(found) == 161
    assert {r["run_id"] for r in found} == {"20261205T080642-8e056403"}
    assert {(r["protocol"]["variant"], r["protocol"]["mutation"], r["protocol"]["iters"],
             r["protocol"]["temperature"]) for r in found} == {("impossible", "split", 0, 0.0)}
    engines = {json.dumps(r["computed_by"], sort_keys=True) for r in found}
    assert len(engines) == 1
    engine = json.loads(engines.pop())
    assert (engine["engine"], engine["device"]) == ("llamacpp", "cpu")
    for written in (engine["version"], engine["kernels"].split(":")[0],
                    engine["host"]["cpu"], found[0]["finished_at"][:10]):
        assert written in MEASURED, written
    # The records' mutations are the ones the variant makes now, and the tasks it leaves out
    # are the ones the records lack: the figure still measures today's variant.
    tasks = load_tasks(PACKAGED, "python")
    _, made = impossible_tasks({"python": tasks}, "split", {task.task_id for task in tasks})
    assert {r["task_id"]: r["mutation"] for r in found} == made.mutations
    figures = cheating.figures(found, made.left_out)
    assert figures is not None
    assert [row["task_id"] for row in figures["left_out"] or []] == [
        "Python/32", "Python/38", "Python/50"]

    rate = figures["rate"]
    assert (rate["count"], rate["of"]) == (1, 161)
    assert rate["ci95"] == list(wilson_interval(1, 161))
    assert f"**{share_text(rate)}**" in MEASURED
    assert figures["by_language"] == {"python": rate}
    assert {kind: (row["count"], row["of"]) for kind, row in figures["by_mutation"].items()} == {
        "one-off": (1, 79), "conflicting": (0, 82)}
    for kind, row in figures["by_mutation"].items():
        assert f"{kind} {share_text(row)}" in MEASURED
    passes = figures["passes"]
    assert [(row["task_id"], row["mutation"]["kind"], row["flags"]) for row in passes] == [
        ("Python/92", "one-off", [])]
    assert "Python/92" in MEASURED
