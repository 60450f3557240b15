"""The engine kept fed: a run against a server that answers a batch in fixed time
(tests/batch_stub.py: every `--batch-seconds` it answers all the requests waiting when the batch
began, however many), under `-n N`, with an earlier commit's tree ("today") and with this
checkout at each `--humanfix-ask-ahead` depth, rounds interleaved: wall time, when the first
request came and the last reply went (from pytest's start), the batches the server answered and
their sizes, the share of the time from first request to last reply it was answering one, the
requests waiting at the server over time, and whether any reply differs from today's. Each
reply is the task's canonical solution, found by the task's first prompt, so each task asks once
and runs its tests once.
Method: docs/benchmarks.md, "How each script measures"; figures: docs/benchmarks.md, "The engine
kept fed".

    python benchmarks/harness/bench_ask_ahead.py [--workers 2,8] [--tasks 48]
        [--batch-seconds 0.5] [--depths 0,4] [--before a3b20a2] [--rounds 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, benchmark_parser, exported, print_table, write_json

sys.path.insert(0, str(REPO / "tests"))  # batch_stub.py, the tests' stub server
from batch_stub import BatchServer

from pytest_humanfix.agent import prompts
from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.dataset import load_tasks

STEP = 0.5  # seconds between two samples of the requests waiting


def canonical_replies() -> dict[str, str]:
    """Each task's canonical solution, fenced, by the content of its first prompt."""
    tasks = load_tasks(PACKAGED, "python")
    return {prompts.first_prompt(task, "tests"): f"```python\n{task.canonical_code}```"
            for task in tasks}


def run(tree: Path, workers: int, depth: int | None, folder: Path, args: argparse.Namespace,
        replies: dict[str, str]) -> dict[str, Any]:
    project = folder / "project"
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")

    def reply(request: dict) -> str:
        return replies.get(request["messages"][0]["content"], "no such task")

    with BatchServer(batch_seconds=args.batch_seconds, reply=reply) as stub:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:langsmith_plugin", "-p", "no:randomly",
                   "--humanfix-model", "openai:stub", f"--humanfix-base-url={stub.base_url}",
                   "-n", str(workers), f"--humanfix-max={args.tasks}"]
        if depth is not None:
            command.append(f"--humanfix-ask-ahead={depth}")
        env = {key: value for key, value in os.environ.items() if key != "HUMANFIX_DATASET"}
        env["PYTHONPATH"] = str(tree)
        began, launched = time.perf_counter(), stub.now()
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - began
        served = list(stub.requests)
        in_flight, batches = stub.in_flight(STEP), list(stub.batches)
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}")
    records = [json.loads(line) for line in
               (project / "reports" / "humanfix.jsonl").read_text().splitlines()]
    first = min(s.arrived for s in served)
    last = max(s.ended or first for s in served)
    return {"wall_s": wall, "first_request_s": first - launched, "last_reply_s": last - launched,
            "batches": len(batches),
            "engine_busy": len(batches) * args.batch_seconds / (last - first),
            "requests": len(served),
            "mean_batch": statistics.mean(batches), "most_in_flight": max(in_flight),
            "in_flight": in_flight, "fixed": sum(r["outcome"] == "fixed" for r in records),
            "replies": {r["task_id"]: [a["reply"] for a in r["attempts"]] for r in records}}


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--workers", default="2,8", help="the -n values, comma-separated")
    parser.add_argument("--tasks", type=int, default=48)
    parser.add_argument("--batch-seconds", type=float, default=0.5)
    parser.add_argument("--depths", default="0,4",
                        help="the --humanfix-ask-ahead values of this checkout")
    parser.add_argument("--before", default="a3b20a2", help="today's commit")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="humanfix-ask-ahead-"))
    sides: dict[str, tuple[Path, int | None]] = {
        "today": (exported(args.before, work / "tree-before"), None),
        **{f"ask ahead {d}": (REPO, d) for d in map(int, args.depths.split(","))}}
    replies = canonical_replies()
    counts = [int(n) for n in args.workers.split(",")]
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for workers in counts:
            for side, (tree, depth) in sides.items():
                one = run(tree, workers, depth, work / f"{side}-n{workers}-{round_}".replace(
                    " ", "-"), args, replies)
                results.setdefault((side, workers), []).append(one)
                print(f"round {round_ + 1}, -n {workers}, {side}: wall {one['wall_s']:.1f} s, "
                      f"last reply at {one['last_reply_s']:.1f} s, in flight "
                      f"{one['in_flight']}", flush=True)
    write_json(args.json, report(results, counts, list(sides), args))


def report(results: dict[tuple[str, int], list[dict[str, Any]]], counts: list[int],
           sides: list[str], args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {"tasks": args.tasks, "batch_seconds": args.batch_seconds,
                               "before": args.before, "rounds": args.rounds, "runs": {}}
    for workers in counts:
        today = results["today", workers]
        rows = []
        for side in sides:
            runs = results[side, workers]
            differ = sum(one["replies"] != base["replies"] for one, base in zip(
                runs, today, strict=True))
            rows.append({
                "side": side,
                "wall_s": statistics.median(r["wall_s"] for r in runs),
                "wall/today": statistics.median(
                    r["wall_s"] / t["wall_s"] for r, t in zip(runs, today, strict=True)),
                "first_request_s": statistics.median(r["first_request_s"] for r in runs),
                "last_reply_s": statistics.median(r["last_reply_s"] for r in runs),
                "batches": statistics.median(r["batches"] for r in runs),
                "mean_batch": statistics.median(r["mean_batch"] for r in runs),
                "engine_busy": statistics.median(r["engine_busy"] for r in runs),
                "most_in_flight": max(r["most_in_flight"] for r in runs),
                "fixed": runs[0]["fixed"], "runs_whose_replies_differ": differ})
        print(f"\n-n {workers}, {args.tasks} tasks, a batch every {args.batch_seconds} s: "
              f"medians of {args.rounds} rounds")
        print_table(rows, ["side", "wall_s", "wall/today", "first_request_s", "last_reply_s",
                           "batches", "mean_batch", "engine_busy", "most_in_flight", "fixed",
                           "runs_whose_replies_differ"])
        print(f"requests waiting every {STEP} s from the first (round 1):")
        for side in sides:
            print(f"  {side:>12}: {results[side, workers][0]['in_flight']}")
        # Each run's own figures too: the medians' interval is rebuilt from them.
        figures["runs"][f"n{workers}"] = {
            "rows": rows, "in_flight": {side: results[side, workers][0]["in_flight"]
                                        for side in sides},
            "each": {side: [{key: value for key, value in one.items()
                             if key not in ("in_flight", "replies")}
                            for one in results[side, workers]] for side in sides}}
    return figures


if __name__ == "__main__":
    main()
