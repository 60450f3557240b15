"""Round mixes projected from two arms' records: which prompt each round after the greedy first
attempt asks, from `rewrite`'s screen (round 1 greedy, written anew; later rounds sampled,
written anew) and `resample`'s run, on the tasks the screen ran. Exact, not estimated: a reply
is a function of its prompt, its temperature and its seed, and a sampled reply's seed is the task's
count of sampled replies before it (a greedy one takes none), so a mix asks what one of the
arms asked. Method: docs/benchmarks.md, "How each script measures"; figures: docs/benchmarks.md,
"Written anew, then resampled".

    python benchmarks/harness/project_round_mixes.py RESAMPLE/humanfix.jsonl \
        SCREEN/humanfix.jsonl [MORE/humanfix.jsonl ...] [--mixes FFF,GFF] [--tasks even|odd]
        [--json PATH]

Each file after the first is a run of `rewrite`'s prompts, read as one: the screen, and runs of
its round 1 alone (`--humanfix-iters 1`) on tasks it did not reach. A run of `rewrite` itself
holds G as its round 1 but F, not W, as its rounds 2 and 3: read it with `--mixes FFF,GFF`. A
task `resample` did not run is told by the mixes that need none of its replies (those fixed
by the screen's round 0 or 1), and unknown for the others. Each mix is set against `resample`
(its tasks only one fixes, McNemar's exact p, its tokens against `resample`'s) on the tasks both
tell, and the table says how many were left out. `--tasks` keeps the even- or odd-numbered
tasks, as `humanfix-report compare --tasks` does.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, read_records, write_json

from pytest_humanfix.records import latest_per_task, natural_order
from pytest_humanfix.reporting.compare import HALVES, selected
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.reporting.stats import mcnemar_exact

# A mix is the prompt of rounds 1 to 3: G the screen's greedy round 1 (written anew), W a
# sample written anew (the screen's rounds 2 and 3 drew its samples 0 and 1), F a sample of the
# first prompt (resample's round k drew its sample k - 1). FFF is resample itself, GWW the screen.
MIXES = ("FFF", "GWW", "GFF", "GFW", "GWF", "FGF", "FFG")

Reply = tuple[bool, int]  # passed, its tokens


def replies(record: dict[str, Any]) -> dict[int, Reply]:
    return {attempt["round"]: (attempt["status"] == "passed",
                               attempt["prompt_tokens"] + attempt["completion_tokens"])
            for attempt in record["attempts"]}


def project(mix: str, screen: dict[int, Reply], resample: dict[int, Reply]
            ) -> tuple[int | None, int] | None:
    """The round that fixed the task (None: unfixed) and the tokens spent, or None where a
    reply of the mix is in neither record (an arm that stopped at its fix did not ask it)."""
    passed, spent = screen[0]
    sampled = 0
    for round_number, prompt in enumerate(mix, 1):
        if passed:
            return round_number - 1, spent
        if prompt == "G":
            reply = screen.get(1)
        else:
            reply = screen.get(sampled + 2) if prompt == "W" else resample.get(sampled + 1)
            sampled += 1
        if reply is None:
            return None
        passed, spent = reply[0], spent + reply[1]
    return (len(mix) if passed else None), spent


def figures(screen: list[dict[str, Any]], resample: list[dict[str, Any]],
            mixes: tuple[str, ...] = MIXES) -> dict[str, Any]:
    by_task = {r["task_id"]: replies(r) for r in resample}
    tasks = sorted({r["task_id"] for r in screen}, key=natural_order)
    screened = {r["task_id"]: r for r in screen}
    told: dict[str, dict[str, tuple[int | None, int]]] = {}
    rows: dict[str, dict[str, Any]] = {}
    for mix in ("FFF", *(mix for mix in mixes if mix != "FFF")):
        told[mix] = {}
        by_round, unknown = [0] * 4, []
        for task in tasks:
            projected = project(mix, replies(screened[task]), by_task.get(task, {}))
            if projected is None:
                unknown.append(task)
                continue
            told[mix][task] = projected
            for k in range(4):
                by_round[k] += projected[0] is not None and projected[0] <= k
        fixed = [task for task, (fixed_in, _) in told[mix].items() if fixed_in is not None]
        rows[mix] = {"fixed": by_round[-1], "by_round": by_round,
                     "tokens": sum(spent for _, spent in told[mix].values()),
                     "unknown": unknown, "fixed_tasks": fixed}
    # Against resample (F F F) only on the tasks both tell: a task either cannot tell pairs
    # with nothing, and counting it as a fix of one side alone would invent a discordant pair.
    for mix, row in rows.items():
        both = [task for task in tasks if task in told[mix] and task in told["FFF"]]
        mine = {task for task in both if told[mix][task][0] is not None}
        theirs = {task for task in both if told["FFF"][task][0] is not None}
        row["compared"] = len(both)
        row["left_out"] = len(tasks) - len(both)
        row["compared_fixed"] = [len(mine), len(theirs)]
        row["only_this"] = sorted(mine - theirs, key=natural_order)
        row["only_resample"] = sorted(theirs - mine, key=natural_order)
        row["p_value"] = mcnemar_exact(len(row["only_this"]), len(row["only_resample"]),
                                       "two-sided")
        row["compared_tokens"] = [sum(told[arm][task][1] for task in both)
                                  for arm in (mix, "FFF")]
    return {"tasks": len(tasks), "mixes": rows}


def main() -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("resample", type=Path, help="the resample run's humanfix.jsonl")
    parser.add_argument("screen", type=Path, nargs="+",
                        help="the rewrite screen's humanfix.jsonl, and any run of its round 1")
    parser.add_argument("--mixes", default=",".join(MIXES),
                        help=f"the mixes to read, comma-separated, of {', '.join(MIXES)} "
                             "(FFF, resample itself, always)")
    parser.add_argument("--tasks", choices=HALVES,
                        help="only the even- or odd-numbered tasks, as compare --tasks")
    args = parser.parse_args()
    mixes = tuple(args.mixes.split(","))
    if unknown := [mix for mix in mixes if mix not in MIXES]:
        parser.error(f"--mixes {args.mixes}: {', '.join(unknown)} is not a mix; each is one "
                     f"of {', '.join(MIXES)}")
    resample = latest_per_task(read_records(args.resample))
    screen = latest_per_task([r for path in args.screen for r in read_records(path)])
    if args.tasks:
        screen, resample, _ = selected(screen, resample, args.tasks)
    projected = figures(screen, resample, mixes)
    print(f"{projected['tasks']} tasks the screen ran")
    print("| rounds 1 / 2 / 3 | fixed within 3 rounds | by round (r0 / r1 / r2 / r3) | tokens |"
          " tasks the records cannot tell | against `resample`, on the tasks both tell: "
          "tasks (left out) | only this / only `resample` (McNemar) | tokens there, x "
          "`resample`'s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for mix, row in projected["mixes"].items():
        told = projected["tasks"] - len(row["unknown"])
        spent, resampled = row["compared_tokens"]
        ratio = f"{spent / resampled:.2f}" if resampled else "-"
        print(f"| {' / '.join(mix)} | {row['fixed']}/{told} | "
              f"{' / '.join(map(str, row['by_round']))} | {row['tokens']:,} | "
              f"{len(row['unknown'])} | {row['compared']} ({row['left_out']}) | "
              f"{len(row['only_this'])} / {len(row['only_resample'])} "
              f"(p = {row['p_value']:.3g}) | {ratio} |")
    write_json(args.json, projected, first_computed_by(screen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
