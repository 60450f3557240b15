"""The records committed under benchmarks/records/ give the figures README.md and the docs quote
of them: `humanfix-report compare`'s and the projections' figures, written as the pages write
them, are on the pages, with their Wilson intervals and McNemar p-values; a recomputed arm is the
one the page documented before, fix for fix and token for token; and every section of
docs/benchmarks.md is rebuilt here or says that it has no records.
The impossible variant's run gives the cheating rate docs/trust.md states."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_humanfix.dataset import PACKAGED, load_tasks
from pytest_humanfix.jsonl import jsonl_bytes
from pytest_humanfix.languages import LANGUAGES, NAMES
from pytest_humanfix.records import natural_order
from pytest_humanfix.reporting import cheating, cli, compare
from pytest_humanfix.reporting.sections import Share
from pytest_humanfix.reporting.stats import mcnemar_exact, pct, wilson_interval
from pytest_humanfix.session.calibration import task_limit
from pytest_humanfix.settings import Settings
from pytest_humanfix.variants.impossible import impossible_tasks

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "benchmarks" / "records"
PAGE = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")
AGENT = (REPO / "docs" / "agent.md").read_text(encoding="utf-8")
OWN_AGENT = (REPO / "docs" / "own-agent.md").read_text(encoding="utf-8")


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
# Each projection the page shows: its records, the script's options, the tasks it reads, and
# what `resample` (F F F) fixes on them by its own records.
PROJECTIONS = {
    "screen": ((RESAMPLE_EVEN, SCREEN), (), 29, 8),
    "even": ((RESAMPLE_EVEN, SCREEN, ROUND1, TAIL), ("--tasks", "even"), 82, 28),
    "odd": ((RESAMPLE_ODD, REWRITE_ODD, TAIL), ("--mixes", "GFF", "--tasks", "odd"), 82, 26),
    "1.5b": (("qwen-coder-1.5b-rewrite/resample-odd", "qwen-coder-1.5b-rewrite/round1-odd"),
             ("--mixes", "GFF", "--tasks", "odd"), 82, 27),
}


@pytest.fixture(scope="module")
def projections(tmp_path_factory) -> dict[str, tuple[list[str], dict]]:
    return {name: projected(tmp_path_factory.mktemp(name), names, *options)
            for name, (names, options, _, _) in PROJECTIONS.items()}


@pytest.fixture(scope="module")
def mixes() -> ModuleType:
    """benchmarks/harness/project_round_mixes.py, loaded from its file."""
    return loaded("project_round_mixes")


def loaded(script: str) -> ModuleType:
    path = REPO / "benchmarks" / "harness" / f"{script}.py"
    spec = importlib.util.spec_from_file_location(script, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attempts(*passed: bool) -> list[dict]:
    return [{"round": number, "status": "passed" if ok else "failed", "prompt_tokens": 10,
             "completion_tokens": 1} for number, ok in enumerate(passed)]


def test_a_mix_is_set_against_resample_only_on_the_tasks_both_tell(mixes):
    """A task `resample` never ran (the screen fixed it by round 1) is the mix's fix and is
    counted as one, but it pairs with nothing: it is left out of the tasks only one fixes, of
    McNemar's p and of the tokens set side by side, and counted as left out; so is a task the
    screen's records cannot tell for a mix."""
    screen = [{"task_id": "Python/1", "attempts": attempts(False, True)},
              {"task_id": "Python/3", "attempts": attempts(False, False)},
              {"task_id": "Python/5", "attempts": attempts(True)}]
    resample = [{"task_id": "Python/3", "attempts": attempts(False, False, False, True)},
                {"task_id": "Python/5", "attempts": attempts(True)}]
    figures = mixes.figures(screen, resample, ("GFF", "GWW"))["mixes"]
    rewrite, itself, written = figures["GFF"], figures["FFF"], figures["GWW"]
    assert rewrite["fixed_tasks"] == ["Python/1", "Python/5"] and rewrite["unknown"] == []
    assert itself["fixed_tasks"] == ["Python/3", "Python/5"] and itself["unknown"] == ["Python/1"]
    assert (rewrite["compared"], rewrite["left_out"]) == (2, 1)
    assert rewrite["only_this"] == [] and rewrite["only_resample"] == ["Python/3"]
    assert rewrite["compared_fixed"] == [1, 2] and rewrite["p_value"] == 1.0
    assert rewrite["compared_tokens"] == [55, 55]
    assert written["unknown"] == ["Python/3"]
    assert (written["compared"], written["left_out"]) == (1, 2)
    assert written["only_this"] == written["only_resample"] == []


@pytest.mark.parametrize("name", PROJECTIONS)
def test_the_projected_mixes_are_on_the_page(projections, name):
    """On the screen's 29 tasks, on each whole half of the 0.5B with round 1 run alone where
    `rewrite` did not run, and on the 1.5B's odd half: the page shows the table the records
    give, row for row, and `resample` (F F F) fixes what its own records do."""
    _, _, tasks, resampled = PROJECTIONS[name]
    table, figures = projections[name]
    assert figures["tasks"] == tasks and len(table) == len(figures["mixes"])
    for row in table:
        assert row in PAGE, f"docs/benchmarks.md lacks the row the records give: {row}"
    assert figures["mixes"]["FFF"]["fixed"] == resampled


@pytest.mark.parametrize("name", ["even", "odd"])
def test_rewrite_on_each_half_of_the_05b_is_told_on_every_task(projections, name):
    """Where `resample` ran every task whole, every task is told by both and none is left out;
    the whole half's `resample` is the documented arm's count."""
    _, figures = projections[name]
    for mix in ("FFF", "GFF"):
        assert figures["mixes"][mix]["unknown"] == [] and figures["mixes"][mix]["left_out"] == 0


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


def test_rewrite_on_the_15b_is_set_against_resample_only_where_resample_ran(projections):
    """`qwen-coder-1.5b`, odd half: `rewrite` read off its runs of round 1 alone and
    `resample`'s of rounds 1 and 2 where those did not fix the task. `resample` ran neither the
    12 tasks `rewrite`'s round 1 fixed nor, on most others, its round 3: on the 43 tasks both
    tell, `rewrite` fixes none that `resample` does not, and `resample` one (Python/63)."""
    _, figures = projections["1.5b"]
    rewrite = figures["mixes"]["GFF"]
    assert rewrite["by_round"] == [18, 31, 34, 38] and rewrite["unknown"] == []
    assert (rewrite["compared"], rewrite["left_out"]) == (43, 39)
    assert rewrite["only_this"] == [] and rewrite["only_resample"] == ["Python/63"]
    assert rewrite["p_value"] == 1.0


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
    return loaded("replay_round_mix")


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


def told(first: str, second: str, fixed: tuple[int, int], tasks: str, model: str,
         variant: str, p_value: float, tokens: tuple[int, int]) -> str:
    """An agent comparison as every page says it: both counts within three rounds, of which
    tasks, the model and variant, which tests chose the reply that counts (in `tests` a round
    runs the grading tests themselves; in `docs` only the examples), the exact McNemar p and
    the cost ratio."""
    chooser = "the grading tests choosing" if variant == "tests" else "the examples choosing"
    return (f"`{first}` fixes {fixed[0]} and `{second}` {fixed[1]} of {tasks} within 3 rounds "
            f"({model}, `{variant}`, {chooser}; exact McNemar p = {p_value:.2g}; "
            f"{tokens[0] / tokens[1]:.2f}x `{second}`'s tokens)")


def by_compare(first: str, second: str, half: str | None) -> tuple:
    both = compared(first, second, half)
    runs = both["runs"]
    return (tuple(run["curve"][-1]["fixed"] for run in runs), both["p_value"],
            tuple(run["cost"]["total"]["tokens"] for run in runs))


def by_projection(figures: list[dict]) -> tuple:
    """G F F against F F F over one projection or the halves of several, on the tasks both
    tell: the counts, the two-sided McNemar p of the tasks only one fixes, the tokens."""
    rows = [one["mixes"]["GFF"] for one in figures]
    only = [sum(len(row[side]) for row in rows) for side in ("only_this", "only_resample")]
    return (tuple(sum(row["compared_fixed"][arm] for row in rows) for arm in (0, 1)),
            mcnemar_exact(*only, "two-sided"),
            tuple(sum(row["compared_tokens"][arm] for row in rows) for arm in (0, 1)))


QWEN, QWEN_15B = "`qwen-coder` 0.5B", "`qwen-coder-1.5b`"
ODD = "the 82 odd-numbered tasks"
# Each comparison the pages make: the two agents, of which tasks, the model and variant, how
# the records give it, and the pages that quote it.
COMPARISONS = {
    "rewrite, tests, all": (("rewrite", "resample", "164 tasks", QWEN, "tests"),
                            lambda p: by_projection([p["even"][1], p["odd"][1]]),
                            (README, AGENT, PAGE)),
    "rewrite, tests, odd": (("rewrite", "resample", ODD, QWEN, "tests"),
                            lambda p: by_projection([p["odd"][1]]), (README, AGENT, PAGE)),
    "rewrite, docs, all": (("rewrite", "resample", "164 tasks", QWEN, "docs"),
                           lambda p: by_compare(REWRITE_DOCS, DOCS[1], None),
                           (README, AGENT, PAGE)),
    "rewrite, docs, odd": (("rewrite", "resample", ODD, QWEN, "docs"),
                           lambda p: by_compare(REWRITE_DOCS, DOCS[1], "odd"),
                           (README, AGENT, PAGE)),
    "repair, docs, all": (("repair", "resample", "164 tasks", QWEN, "docs"),
                          lambda p: by_compare(*DOCS, None), (README, AGENT, PAGE)),
    "rewrite, 1.5b": (("rewrite", "resample",
                       "the 43 odd-numbered tasks both arms' records tell", QWEN_15B, "tests"),
                      lambda p: by_projection([p["1.5b"][1]]), (README, AGENT, PAGE)),
    "repair, 1.5b, last 19": (("repair", "resample", "the last 19 odd-numbered tasks",
                               QWEN_15B, "tests"),
                              lambda p: by_compare("qwen-coder-1.5b-odd/repair.jsonl.gz",
                                                   "qwen-coder-1.5b-odd/resample.jsonl.gz",
                                                   "odd"), (AGENT, PAGE)),
    "hinted, even": (("hinted", "resample", "the 82 even-numbered tasks", QWEN, "tests"),
                     lambda p: by_compare(*CANDIDATES["hinted, even"][:3]), (AGENT, PAGE)),
}


@pytest.mark.parametrize("name", COMPARISONS)
def test_each_agent_comparison_is_quoted_as_its_records_give_it(projections, name):
    (first, second, tasks, model, variant), how, pages = COMPARISONS[name]
    fixed, p_value, tokens = how(projections)
    sentence = told(first, second, fixed, tasks, model, variant, p_value, tokens)
    for page in pages:
        assert sentence in page, f"a page quoting {name} lacks what its records give: {sentence}"


def cell(fixed: int, tasks: int) -> str:
    """A pass rate as README's reference table gives it: with its 95% Wilson interval."""
    low, high = wilson_interval(fixed, tasks)
    return f"{pct(fixed / tasks)} [{pct(low)}, {pct(high)}] ({fixed}/{tasks})"


MAIN_JOB = "qwen-coder-main-job/humanfix.jsonl.gz"


def test_the_main_jobs_figures_and_chart_are_its_records(tmp_path):
    """README's main job: 7 of the first 20 tasks fixed, which ones, its interval and tokens,
    and the chart README and the docs show is the one its records draw."""
    run = records(RECORDS / MAIN_JOB)
    assert sorted(r["task_id"] for r in run) == sorted(f"Python/{n}" for n in range(20))
    fixed = sorted(natural_order(r["task_id"])[1] for r in run if r["outcome"] == "fixed")
    listed = ", ".join(map(str, fixed[:-1])) + f" and {fixed[-1]}"
    assert f"35% (7/20: Python/{listed})" in README and len(fixed) == 7
    assert f"pass@1 {cell(len(fixed), 20)}" in README
    completion = sum(r["tokens"]["completion"] for r in run)
    prompt = sum(r["tokens"]["prompt"] for r in run)
    # The built-in agent and the same agent through the contract, without a round.
    rate = pct(len(fixed) / 20)
    assert f"| {rate} ({len(fixed)}/20) both | r0 {rate} | {prompt} + {completion} both |" \
        in OWN_AGENT
    low, high = wilson_interval(len(fixed), 20)
    assert (f"| {pct(len(fixed) / 20)} | [{pct(low)}, {pct(high)}] | {len(fixed)}/20 (Python/"
            f"{', '.join(map(str, fixed))}) | {completion:,} |") in PAGE
    path = tmp_path / "humanfix.jsonl"
    path.write_bytes(jsonl_bytes(run))
    assert cli.main([str(path), "--out", str(tmp_path / "out")]) == 0
    chart = (REPO / "docs" / "img" / "summary-qwen-coder.svg").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "summary.svg").read_text(encoding="utf-8") == chart


def test_readmes_reference_figures_are_their_records(projections):
    """Round 0 and each agent within three rounds, with their Wilson intervals: the 0.5B's
    `tests` run whole by `resample` on both halves and projected for `rewrite`, its `docs`
    arms, and the 1.5B's odd half."""
    resample = [*records(RECORDS / f"{RESAMPLE_EVEN}.jsonl.gz"),
                *records(RECORDS / f"{RESAMPLE_ODD}.jsonl.gz")]
    round0 = sum(r["outcome"] == "fixed" and r["fixed_round"] == 0 for r in resample)
    fixed = sum(r["outcome"] == "fixed" for r in resample)
    rewrite = sum(projections[half][1]["mixes"]["GFF"]["fixed"] for half in ("even", "odd"))
    assert len(resample) == 164
    assert (f"round 0 {cell(round0, 164)}; within 3 rounds, `resample` {cell(fixed, 164)}, "
            f"`rewrite` {cell(rewrite, 164)}") in README
    repair, resampled = compared(*DOCS, None)["runs"]
    written = compared(REWRITE_DOCS, DOCS[1], None)["runs"][0]
    # In `docs` rewrite's round 1 writes the function from its docstring: synthesis.
    assert f"({written['curve'][1]['fixed']} of the 164 fixed by round 1)" in README
    assert (f"round 0 {cell(repair['curve'][0]['fixed'], 164)}; within 3 rounds, `repair` "
            f"{cell(repair['curve'][-1]['fixed'], 164)}, `resample` "
            f"{cell(resampled['curve'][-1]['fixed'], 164)}, `rewrite` "
            f"{cell(written['curve'][-1]['fixed'], 164)}") in README
    larger = projections["1.5b"][1]["mixes"]["GFF"]["by_round"]
    assert f"round 0 {cell(larger[0], 82)}; within 3 rounds, `rewrite` {cell(larger[-1], 82)}" \
        in README


def test_the_reference_tables_tests_rows_are_their_records(projections):
    """"All 164 tasks, each half": round 0, `resample` and `rewrite` in `tests` on the 0.5B,
    and round 0 and `rewrite` on the 1.5B's odd half, with their Wilson intervals, as the
    records give them; `resample`'s 1.5B records tell 27 of 43."""
    def rate(fixed: int, tasks: int) -> str:
        low, high = wilson_interval(fixed, tasks)
        return f"{fixed}/{tasks}: {pct(fixed / tasks)} [{pct(low)}, {pct(high)}]"

    halves = [projections[half][1]["mixes"] for half in ("even", "odd")]
    round0, resampled, rewrite = (sum(half[mix]["by_round"][k] for half in halves)
                                  for mix, k in (("FFF", 0), ("FFF", 3), ("GFF", 3)))
    assert f"| `qwen-coder` (0.5B) | `tests` | {rate(round0, 164)} | " in PAGE
    assert f"| {rate(resampled, 164)} | {rate(rewrite, 164)} ([read off runs]" in PAGE
    larger = projections["1.5b"][1]["mixes"]
    told = 82 - len(larger["FFF"]["unknown"])
    round0 = rate(larger["GFF"]["by_round"][0], 82)
    assert f"| `qwen-coder-1.5b`, the odd half | `tests` | {round0} | " in PAGE
    assert f"its records tell {larger['FFF']['fixed']} of {told}) | " \
        f"{rate(larger['GFF']['fixed'], 82)} ([read off runs]" in PAGE


def unchanged(record: dict, attempt: dict, tasks: dict) -> bool:
    """The reply is the buggy function: its body, docstring aside, the buggy one's, as Python's
    parser reads both."""
    def body(code: str, name: str) -> str | None:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                statements = node.body
                if statements and isinstance(statements[0], ast.Expr) \
                        and isinstance(statements[0].value, ast.Constant):
                    statements = statements[1:]
                return ast.dump(ast.Module(body=statements, type_ignores=[]))
        return None

    task = tasks[record["task_id"]]
    found = body(attempt["code"], task.entry_point)
    return found is not None and found == body(task.declaration + task.buggy_solution,
                                                task.entry_point)


def test_the_replies_told_of_hinted_and_rewrite_are_their_records():
    """What the replies show, as the pages count them: round 0 returned the buggy function on
    37 of the 82 even-numbered tasks; in rounds 1 to 3 `hinted` copied it, repeated failed code
    and passed as often as the page says against `resample`, at its prompt tokens a reply."""
    tasks = {task.task_id: task for task in load_tasks(PACKAGED)}
    hinted, resample = (records(RECORDS / path) for path in CANDIDATES["hinted, even"][:2])
    copied = sum(unchanged(r, r["attempts"][0], tasks) for r in resample)
    assert f"buggy function unchanged on {copied} of the 82 even-numbered tasks " \
        f"({round(100 * copied / 82)}%)" in " ".join(PAGE.split())
    said = []
    for run in (hinted, resample):
        later = [(r, a) for r in run for a in r["attempts"] if a["round"] >= 1]
        said.append((len(later), sum(unchanged(r, a, tasks) for r, a in later),
                     sum(a["status"] == "repeat" for _, a in later),
                     sum(a["status"] == "passed" for _, a in later),
                     round(sum(a["prompt_tokens"] for _, a in later) / len(later))))
    (replies, copies, repeats, passed, prompt), theirs = said
    assert (f"{copies} of `hinted`'s {replies} replies were the buggy function unchanged (its "
            f"body, docstring aside, the buggy one's as Python's parser reads both) against "
            f"{theirs[1]} of `resample`'s {theirs[0]}, {repeats} repeated failed code against "
            f"{theirs[2]}, and {passed} passed against {theirs[3]}, at {prompt} prompt tokens a "
            f"reply against {theirs[4]}") in " ".join(PAGE.split())


# Sections of docs/benchmarks.md whose figures the tests above rebuild from the records they
# name; some also quote figures without records, which they mark.
REBUILT = {"The main job", "All 164 tasks, each half", "The `docs` variant, each half",
           "`rewrite` in the `docs` variant", "`qwen-coder-1.5b` on the odd half",
           "Told how the buggy code fails (measured, not kept)",
           "Written anew, then resampled: `rewrite`",
           "`rewrite` on `qwen-coder-1.5b`, the odd half"}
# Sections that quote no measured figure: a heading over others, a definition, the scripts.
WITHOUT_FIGURES = {"CPU engines compared", 'What "within k rounds" measures',
                   "The benchmark scripts", "Harness", "Engine", "How each script measures"}
# The GPU runbook, whose sections are its rehearsal's timings, each with machine, date and tree.
GPU = "The default path on a GPU"


def sections(page: str) -> list[tuple[str, str, str]]:
    """(its heading, the heading of the part it is in, its text) of every part and section."""
    found, part = [], ""
    headed = re.compile(r"^(##|###) ([^\n]+)\n(.*?)(?=^##|\Z)", re.MULTILINE | re.DOTALL)
    for match in headed.finditer(page):
        level, heading, text = match.groups()
        part = heading if level == "##" else part
        found.append((heading, part, text))
    return found


def test_every_section_of_the_benchmarks_page_is_rebuilt_or_says_it_has_no_records():
    """A figure is rebuilt from committed records, or its section says at its head that it has
    none, so that no reader takes history for a figure a test holds."""
    found = sections(PAGE)
    headings = {heading for heading, _, _ in found}
    assert REBUILT | WITHOUT_FIGURES | {GPU} <= headings, "a listed section is gone"
    unmarked = []
    for heading, part, text in found:
        if part == GPU or heading in WITHOUT_FIGURES:
            continue
        if heading in REBUILT:
            assert "benchmarks/records/" in text, f"{heading} does not name its records"
        elif not text.lstrip().startswith("**No records"):
            unmarked.append(heading)
    assert not unmarked, f"sections neither rebuilt nor marked **No records.**: {unmarked}"

# Each task's limit: the references' timing noise, and the H200's replies replayed.
LIMITS = RECORDS / "task-limits"
TRUST = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
NOISE = {name: LIMITS / f"reference-noise-{name}.json" for name in NAMES
         if (LIMITS / f"reference-noise-{name}.json").exists()}


def measured(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def noise_row(name: str, figures: dict, defaults: Settings) -> str:
    """trust.md's row of a language's noise rounds: tasks, rounds, load, the calibration (the
    first quiet round), how many tasks the floor sets the limit of, and each later round's
    times against the calibration's, quiet and loaded."""
    spread, rounds = figures["spread"], figures["rounds"]
    calibration = rounds[0]["seconds"]
    floored = sum(task_limit(seconds, defaults.timeout_factor, defaults.timeout_floor,
                             LANGUAGES[name].timeout).seconds == defaults.timeout_floor
                  for seconds in calibration.values())
    loads = [r["load_average"] for r in rounds]

    def ratios(condition: str) -> str:
        row = spread[condition]
        return (f"×{row['ratio_median']:g} / ×{row['ratio_p99']:g} / ×{row['ratio_max']:g} "
                f"({row['worst']})")

    return (f"| {name} | {len(calibration)} | {spread['quiet']['rounds']} + "
            f"{spread['loaded']['rounds']} | {min(loads):g} to {max(loads):g} | "
            f"{spread['calibration_median']:g} s ({spread['calibration_max']:g} s) | {floored} | "
            f"{ratios('quiet')} | {ratios('loaded')} |")


def defaults_row(pair: str, languages: dict[str, dict]) -> str:
    """trust.md's row of a (floor, factor) pair: in each language's loaded rounds, the
    executions past the first limit and past the re-run's, and the least margin."""
    cells = []
    for figures in languages.values():
        score = figures["spread"]["loaded"]["defaults"][pair]
        cells.append(f"{score['past_first_limit']} / {score['past_rerun_limit']}, "
                     f"×{score['least_margin']:g}")
    return f"| {pair} | {' | '.join(cells)} |"


def test_the_reference_noise_figures_are_their_records_and_on_the_page():
    """bench_reference_noise.py's figures, computed again from each committed record's round
    times, are the ones it wrote; trust.md shows them, and its defaults' row is the declared
    defaults' (floor, K)."""
    noise = loaded("bench_reference_noise")
    assert "python" in NOISE
    languages = {name: measured(path)["figures"]["languages"][name]
                 for name, path in NOISE.items()}
    defaults = Settings()
    for name, figures in languages.items():
        assert noise.spread(figures["rounds"], LANGUAGES[name].timeout) == figures["spread"]
        row = noise_row(name, figures, defaults)
        assert row in TRUST, f"docs/trust.md lacks the row the records give: {row}"
    chosen = f"floor {defaults.timeout_floor:g}, factor {defaults.timeout_factor:g}"
    assert (defaults.timeout_floor, defaults.timeout_factor) in noise.CANDIDATES
    for floor, factor in noise.CANDIDATES:
        pair = f"floor {floor:g}, factor {factor:g}"
        row = defaults_row(pair, languages)
        if pair == chosen:
            row = row.replace(f"| {pair} |", f"| {pair} (the defaults) |", 1)
        assert row in TRUST, f"docs/trust.md lacks the row the records give: {row}"


def replay_row(tree: str, figures: dict) -> str:
    """trust.md's row of a tree in bench_task_limits.py replay: each round's canonical and
    replay seconds, the median ratio (computed again), the replay's fixed count, the tasks
    whose graded run timed out, their task seconds and the others', and their limits."""
    canonical, replayed = figures["runs"][f"{tree} canonical"], figures["runs"][f"{tree} replay"]
    ratio = statistics.median(r["wall_seconds"] / c["wall_seconds"]
                              for c, r in zip(canonical, replayed, strict=True))
    assert round(ratio, 2) == figures[f"{tree} ratio median"]
    fixed = {f"{r['fixed']}/{r['tasks']}" for r in replayed}
    timed_out = {", ".join(r["timed_out"]) for r in replayed}
    limits = {"; ".join(f"{first:g} then {then:g} s" for first, then in r["limits"])
              for r in replayed}
    assert len(fixed) == len(timed_out) == len(limits) == 1, "the rounds disagree"

    def seconds(runs: list[dict], key: str) -> str:
        return " / ".join(f"{r[key]:.1f}" for r in runs)

    return (f"| {tree} | {seconds(canonical, 'wall_seconds')} | "
            f"{seconds(replayed, 'wall_seconds')} | {ratio:.2f} | {fixed.pop()} | "
            f"{timed_out.pop()} | {seconds(replayed, 'timed_out_task_seconds')} | "
            f"{seconds(replayed, 'other_task_seconds')} | {limits.pop()} |")


def test_the_h200_replay_figures_are_their_record_and_on_the_page():
    """bench_task_limits.py replay's record: the H200's 21 fixes kept on every tree and round,
    and each tree's row of trust.md, its median ratio computed again from the rounds."""
    figures = measured(LIMITS / "replay-h200.json")["figures"]
    trees = sorted({run.split()[0] for run in figures["runs"]})
    assert "now" in trees
    for tree in trees:
        assert {r["fixed"] for r in figures["runs"][f"{tree} replay"]} == {21}
        row = replay_row(tree, figures)
        assert row in TRUST, f"docs/trust.md lacks the row the records give: {row}"

IMPOSSIBLE = "qwen-coder-impossible/split.jsonl.gz"
TRUST = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
# The paragraph that quotes the measured rate, its lines joined as a reader reads them.
MEASURED = " ".join(TRUST[TRUST.index("- **Measured.** `qwen-coder`"):].split())


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
    # README's reference row, in its own cells' form.
    by_kind = figures["by_mutation"]
    assert (f"cheating rate {cell(rate['count'], rate['of'])}: one-off "
            f"{cell(by_kind['one-off']['count'], by_kind['one-off']['of'])}, conflicting "
            f"{cell(by_kind['conflicting']['count'], by_kind['conflicting']['of'])} | "
            f"{found[0]['finished_at'][:10]}, `0216f7f` |") in README
