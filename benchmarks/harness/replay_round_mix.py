"""`rewrite` in the `docs` variant, run by its own agent on recorded replies: round 0 and
round 1 from a run of round 1 alone, each later round `resample`'s own sample, replayed through
`--humanfix-model replay:` so that the agent's loop and the sandbox decide, as in a run, which
round ends the task. Method and figures: docs/benchmarks.md, "`rewrite` in the `docs` variant".

    python benchmarks/harness/replay_round_mix.py write RESAMPLE/humanfix.jsonl \
        ROUND1/humanfix.jsonl [MORE/humanfix.jsonl ...] --out mix.jsonl
    pytest --humanfix-model replay:mix.jsonl --humanfix-agent rewrite --humanfix-variant docs \
        --humanfix-iters 3 --humanfix-report-dir=replayed
    python benchmarks/harness/replay_round_mix.py price mix.jsonl \
        replayed/humanfix.jsonl --out rewrite.jsonl

In `tests`, a round's record says whether its reply passed the hidden tests, so
project_round_mixes.py reads a mix off the records. In `docs` a round runs only the examples, and
the last round of a run runs none: a run of round 1 alone does not say whether its reply passes
the examples, which decides whether a longer run would stop there. The replay runs them.

A reply is a function of its prompt, its temperature and its seed, and a sampled reply's seed
is the task's count of sampled replies before it (`rewrite`'s round 1 is greedy and takes none),
so `rewrite`'s rounds 2 and 3 ask what `resample`'s rounds 1 and 2 asked. `write` queues each
task's replies in that order, with the tokens and seconds each took. `price` gives each replayed
attempt the tokens and generation seconds of the reply it was served, and refuses a task whose
run asked a reply in another round than it was queued for, or more replies than were queued
(the replay then repeats its last reply where a model would have drawn a new one).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, read_records, write_json

from pytest_humanfix.jsonl import jsonl_bytes
from pytest_humanfix.records import latest_per_task, natural_order

PRICED = ("prompt_tokens", "completion_tokens", "generate_seconds")


def queued(resample: list[dict[str, Any]], round1: list[dict[str, Any]]
           ) -> list[dict[str, Any]]:
    """One replay line per reply, task by task in task order: the round-1 run's attempts
    (round 0 and round 1), then `resample`'s after round 0, each with the round it answers in
    `rewrite` (resample's round k is rewrite's k + 1)."""
    sampled = {r["task_id"]: [(a["round"] + 1, a) for a in r["attempts"] if a["round"] >= 1]
               for r in resample}
    lines = []
    for record in sorted(round1, key=lambda r: natural_order(r["task_id"])):
        task = record["task_id"]
        if task not in sampled:
            raise SystemExit(f"{task} is in the round-1 run but not in resample's records: "
                             "run resample on it too")
        for round_number, attempt in [(a["round"], a) for a in record["attempts"]] \
                + sampled[task]:
            # The model's name and what computed the replies go with them: the replay keeps
            # the first line's computed_by as what it replayed, and `price` names the model.
            lines.append({"task_id": task, "completion": attempt["reply"], "round": round_number,
                          **{name: attempt[name] for name in PRICED},
                          "model": record["model"], "computed_by": record["computed_by"]})
    return lines


def priced(mix: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The replayed records, each attempt with the tokens and generation seconds of the reply it
    was served (the replay serves a task's replies in order), the task's totals summed, and the
    model named as the replies' (its computed_by says the run was a replay, and of what)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for line in mix:
        by_task.setdefault(line["task_id"], []).append(line)
    records = []
    for record in replayed:
        task, attempts = record["task_id"], record["attempts"]
        served = by_task.get(task, [])
        if len(attempts) > len(served):
            raise SystemExit(f"{task}: the replayed run asked {len(attempts)} replies where "
                             f"{len(served)} were queued; its rounds cannot be told")
        priced_attempts = []
        # A task that ends early leaves the rest of its queue unserved.
        for attempt, line in zip(attempts, served, strict=False):
            if (attempt["reply"], attempt["round"]) != (line["completion"], line["round"]):
                raise SystemExit(f"{task}: round {attempt['round']}'s reply was queued for "
                                 f"round {line['round']}: its rounds cannot be told")
            priced_attempts.append({**attempt, **{name: line[name] for name in PRICED}})
        records.append({
            **record, "model": served[0]["model"], "attempts": priced_attempts,
            "tokens": {"prompt": sum(a["prompt_tokens"] for a in priced_attempts),
                       "completion": sum(a["completion_tokens"] for a in priced_attempts)},
            "seconds": round(sum(a["generate_seconds"] + a["execute_seconds"]
                                 for a in priced_attempts), 4)})
    return records


def written(path: Path, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """LINES to PATH, one JSON object a line; the figures of what was written."""
    path.write_bytes(jsonl_bytes(lines))
    print(f"{len(lines)} lines written to {path}")
    return {"lines": len(lines), "tasks": len({line["task_id"] for line in lines})}


def main() -> int:
    parser = benchmark_parser(__doc__)
    steps = parser.add_subparsers(dest="step", required=True)
    write = steps.add_parser("write", help="queue the replies of rewrite's rounds, in order")
    write.add_argument("resample", type=Path, help="the resample run's humanfix.jsonl")
    write.add_argument("round1", type=Path, nargs="+",
                       help="runs of rewrite's round 1 alone (--humanfix-iters 1)")
    price = steps.add_parser("price", help="the replayed run's records, with the replies' cost")
    price.add_argument("mix", type=Path, help="the file `write` wrote")
    price.add_argument("replayed", type=Path, help="the replayed run's humanfix.jsonl")
    for step in (write, price):
        step.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    args = parser.parse_args()
    if args.step == "write":
        resample = latest_per_task(read_records(args.resample))
        round1 = latest_per_task([r for path in args.round1 for r in read_records(path)])
        lines = queued(resample, round1)
        figures = written(args.out, lines)
    else:
        lines = priced(read_records(args.mix), latest_per_task(read_records(args.replayed)))
        figures = written(args.out, lines) | {
            "fixed": sum(r["outcome"] == "fixed" for r in lines),
            "tokens": sum(r["tokens"]["prompt"] + r["tokens"]["completion"] for r in lines)}
        print(f"fixed {figures['fixed']} of {figures['tasks']} tasks for "
              f"{figures['tokens']:,} tokens")
    write_json(args.json, figures, lines[0]["computed_by"] if lines else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
