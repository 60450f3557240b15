"""The fallback engine's stops: the same tasks through `--humanfix-serve --humanfix-engine
transformers` with the client of an earlier commit, whose replies ran past their stops, with the
client as it is, and through `--humanfix-engine llamacpp`. Method: docs/benchmarks.md, "How each
script measures"; figures: docs/benchmarks.md, "The fallback's stops".

    python benchmarks/engine/bench_fallback_stops.py [--tasks 4] [--max-new-tokens 256] [--keep DIR]
        [--runs fallback-before,fallback,llamacpp] [--reuse] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import (
    REPO,
    add_dataset_argument,
    agreement,
    benchmark_parser,
    exported,
    project_run,
    replies,
    reused,
    write_json,
)

from pytest_humanfix.agent import prompts
from pytest_humanfix.computed_by import describe
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.stopping import stop_point
from pytest_humanfix.reporting.gates import first_computed_by

# The last commit whose client asked transformers serve without streaming, so that its replies
# ran past their stop strings.
BEFORE = "48d8780"
RUNS = {"fallback-before": "transformers", "fallback": "transformers", "llamacpp": "llamacpp"}


def run(name: str, args: argparse.Namespace, folder: Path) -> tuple[float, list[dict]]:
    tree = exported(args.before, folder / "tree-before") if name == "fallback-before" else REPO
    return project_run(folder / name, [
        "--humanfix-model", "qwen-coder", f"--humanfix-max={args.tasks}",
        f"--humanfix-max-new-tokens={args.max_new_tokens}", "-n", str(args.workers),
        "--humanfix-serve", f"--humanfix-engine={RUNS[name]}",
        f"--humanfix-request-timeout={args.request_timeout}"], args.dataset, tree=tree)


def past_stop(records: list[dict], stops: dict[str, list[str]]) -> int:
    """Replies holding one of their task's chat stop strings: text the server generated past
    the stop and the client kept."""
    return sum(stop_point(reply, stops[r["task_id"]]) is not None
               for r in records for reply in replies(r))


def prefixes(before: list[dict], after: list[dict]) -> tuple[int, int]:
    """How many of AFTER's replies are a prefix of BEFORE's reply to the same task, of how
    many compared."""
    by_task = {r["task_id"]: replies(r) for r in before}
    pairs = [(mine, theirs) for r in after
             for mine, theirs in zip(replies(r), by_task.get(r["task_id"], []), strict=False)]
    return sum(theirs.startswith(mine) for mine, theirs in pairs), len(pairs)


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--before", default=BEFORE, help="the commit of the run before")
    # Replies that run to their limit on a busy 2-core machine outlast the default 300 s.
    parser.add_argument("--request-timeout", type=float, default=1800)
    parser.add_argument("--runs", default=",".join(RUNS),
                        help="comma-separated subset of " + ", ".join(RUNS))
    parser.add_argument("--keep", type=Path, help="keep each run's project folder here")
    parser.add_argument("--reuse", action="store_true",
                        help="take a finished run from the --keep folder instead of running it "
                             "again (its wall time is the one its summary recorded)")
    args = parser.parse_args()

    tasks = {t.task_id: t for t in load_tasks(str(args.dataset))}
    stops = {task_id: prompts.chat_stop("code", task) for task_id, task in tasks.items()}
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        results = {name: reused(folder / name) if args.reuse and args.keep
                   and (folder / name / "reports" / "summary.json").is_file()
                   else run(name, args, folder) for name in args.runs.split(",") if name}
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; qwen-coder, first "
          f"{args.tasks} tasks, greedy, chat, {args.max_new_tokens} new tokens at most, "
          f"-n {args.workers}; before = {args.before}")
    figures: dict[str, Any] = {"tasks": args.tasks, "max_new_tokens": args.max_new_tokens,
                               "workers": args.workers, "before": args.before, "runs": {}}
    for name, (seconds, records) in results.items():
        attempts = [a for r in records for a in r.get("attempts") or []]
        tokens = sum(r["tokens"]["completion"] for r in records)
        limited = sum(a.get("finish_reason") == "length" for a in attempts)
        errors = sum(r["outcome"] == "error" for r in records)
        holding = past_stop(records, stops)
        computed = describe(first_computed_by(records))
        figures["runs"][name] = {
            "completion_tokens_per_task": tokens / max(len(records), 1),
            "replies_at_the_limit": limited, "replies": len(attempts),
            "replies_holding_a_stop": holding, "wall_seconds": seconds, "errors": errors}
        print(f"{name:16s} {tokens / max(len(records), 1):6.1f} completion tokens/task, "
              f"{limited}/{len(attempts)} replies at the limit, "
              f"{holding} holding a stop string, {seconds:6.1f} s wall, "
              f"{errors} errors; computed by: {computed}")
    if {"fallback-before", "fallback"} <= results.keys():
        before, after = results["fallback-before"][1], results["fallback"][1]
        prefix, pairs = prefixes(before, after)
        completion = [sum(r["tokens"]["completion"] for r in run) for run in (before, after)]
        figures["fallback_vs_before"] = {"replies_a_prefix": prefix, "replies_compared": pairs,
                                         "completion_tokens_before_after": completion}
        print(f"fallback replies that are a prefix of the reply before: {prefix}/{pairs}; "
              f"completion tokens before/after: {completion[0]}/{completion[1]}")
    if {"fallback", "llamacpp"} <= results.keys():
        counts = agreement(results["llamacpp"][1], results["fallback"][1])
        figures["fallback_vs_llamacpp"] = counts
        print(f"fallback vs llamacpp (fp32 dequantized vs Q4_K_M kernels): "
              f"{counts['replies'] - counts['differ']}/{counts['replies']} replies identical, "
              f"{counts['prompts_differ']} prompts counted differently, "
              f"{counts['lost'] + counts['gained']} outcomes flip")
    write_json(args.json, figures,
               {name: first_computed_by(records) for name, (_, records) in results.items()})

if __name__ == "__main__":
    main()
