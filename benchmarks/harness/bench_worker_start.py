"""Workers ready at once: how long after pytest starts the first task begins and its first
request reaches the server, under `-n N` against a stub OpenAI-compatible server on loopback,
and what each process does before (a table per step: the interpreter and pytest's plugins, the
plugin's imports, loading the tasks, choosing the sandbox, collecting, loading the model with
its imports and its probes of the server, building the agent's graph; in the controller its
checks, its probes and the calibration), for this checkout against an earlier commit's tree in
the same run, rounds interleaved. Each run starts with an empty calibration cache, as a fresh
machine does, unless `--warm-cache`. Method: docs/benchmarks.md, "How each script measures";
figures: docs/benchmarks.md, "Workers ready at once".

    python benchmarks/harness/bench_worker_start.py [--workers 2,8] [--rounds 3]
        [--before a3b20a2] [--executor auto|warm|fresh] [--warm-cache] [--json PATH]
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

# start_phases.py's folder: a pytest plugin, not a script of its own.
PLUGINS = Path(__file__).resolve().parent / "pytest_plugins"

# The steps of start_phases.py, in the order they come, by the process that takes them.
WORKER_STEPS = ["python, pytest and plugins", "import the plugin's modules", "load tasks",
                "choose sandbox", "collect", "load model", "probe /v1/models",
                "probe /props, /version", "wait for warm executor", "build graph",
                "preload", "ready to first task"]
CONTROLLER_STEPS = ["python, pytest and plugins", "import the plugin's modules", "validate",
                    "probe servers", "calibrate", "register", "workers configured"]


def run(tree: Path, workers: int, folder: Path, args: argparse.Namespace,
        cache: Path) -> dict[str, Any]:
    """One run of the whole selection; when its first task began and its first request came,
    and each process's steps (start_phases.py's stamps), on one clock from the launch."""
    project, phases = folder / "project", folder / "phases"
    project.mkdir(parents=True)
    phases.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    with BatchServer(batch_seconds=0.0) as stub:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:langsmith_plugin", "-p", "no:randomly", "-p", "start_phases",
                   "--humanfix-model", "openai:stub", f"--humanfix-base-url={stub.base_url}",
                   "-n", str(workers), f"--humanfix-executor={args.executor}"]
        env = {key: value for key, value in os.environ.items() if key != "HUMANFIX_DATASET"}
        env.update(PYTHONPATH=f"{tree}{os.pathsep}{PLUGINS}", HUMANFIX_PHASES=str(phases),
                   XDG_CACHE_HOME=str(cache))
        launched, stub_launched = time.time(), stub.now()
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
        wall = time.time() - launched
        arrivals = sorted(served.arrived - stub_launched for served in stub.requests)
        probes = len(stub.gets)
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}")
    processes = [json.loads(path.read_text()) for path in sorted(phases.glob("*.json"))]
    workers_seen = [p for p in processes if p["role"] != "controller"]
    controller = next(p for p in processes if p["role"] == "controller")
    first = min(p["marks"]["first task"] for p in workers_seen) - launched
    return {"wall_s": wall, "first_task_s": first, "first_request_s": arrivals[0],
            "probes": probes, "controller": steps(controller, launched, CONTROLLER_STEPS),
            "worker": {name: statistics.mean(steps(p, launched, WORKER_STEPS)[name]
                                             for p in workers_seen) for name in WORKER_STEPS},
            "imports": imports(workers_seen[0])}


def steps(process: dict[str, Any], launched: float, names: list[str]) -> dict[str, float]:
    """Each step's seconds in one process (0 where this tree has no such step)."""
    marks = process["marks"]
    took = dict.fromkeys(names, 0.0)
    for step in process["steps"]:
        if step["step"] in took:
            took[step["step"]] += step["ended"] - step["began"]
    took["python, pytest and plugins"] = marks["configure"] - marks["process"]
    if "collect" in marks and "collected" in marks:
        took["collect"] = marks["collected"] - marks["collect"]
    if "first task" in marks:  # what is left between collecting and the first task
        took["ready to first task"] = marks["first task"] - marks.get("collected", launched)
    if "workers configured" in marks:  # when the last worker was sent its state
        took["workers configured"] = marks["workers configured"] - launched
    return took


def imports(process: dict[str, Any]) -> dict[str, list[str]]:
    """The top-level packages each step of a worker imported first."""
    return {step["step"]: step["imported"] for step in process["steps"] if step["imported"]}


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--workers", default="2,8", help="the -n values, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="a3b20a2", help="the commit to compare against")
    parser.add_argument("--executor", default="auto", choices=["auto", "warm", "fresh"])
    parser.add_argument("--warm-cache", action="store_true",
                        help="keep each side's calibration cache between runs (measured "
                             "once before the rounds)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="humanfix-worker-start-"))
    trees = {"before": exported(args.before, work / "tree-before"), "after": REPO}
    caches = {side: work / f"cache-{side}" for side in trees}
    if args.warm_cache:
        for side, tree in trees.items():
            run(tree, counts[0], work / f"warm-{side}", args, caches[side])
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for workers in counts:
            for side, tree in trees.items():
                folder = work / f"{side}-n{workers}-{round_}"
                cache = caches[side] if args.warm_cache else folder / "cache"
                results.setdefault((side, workers), []).append(
                    run(tree, workers, folder, args, cache))
                print(f"round {round_ + 1}, -n {workers}, {side}: first task at "
                      f"{results[side, workers][-1]['first_task_s']:.2f} s", flush=True)
    figures = report(results, counts, args)
    write_json(args.json, figures)


def median(runs: list[dict[str, Any]], *path: str) -> float:
    values = []
    for one in runs:
        value: Any = one
        for key in path:
            value = value[key]
        values.append(value)
    return statistics.median(values)


def report(results: dict[tuple[str, int], list[dict[str, Any]]], counts: list[int],
           args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {"before": args.before, "executor": args.executor,
                               "warm_cache": args.warm_cache, "rounds": args.rounds, "runs": {}}
    for workers in counts:
        before, after = results["before", workers], results["after", workers]
        print(f"\n-n {workers}: medians of {args.rounds} runs, seconds from pytest's start")
        rows = [{"figure": name, "before": median(before, key), "after": median(after, key),
                 "after/before": median(after, key) / median(before, key)}
                for name, key in (("first task begins", "first_task_s"),
                                  ("first request", "first_request_s"),
                                  ("wall", "wall_s"))]
        rows.append({"figure": "GET requests (probes)", "before": median(before, "probes"),
                     "after": median(after, "probes")})
        print_table(rows, ["figure", "before", "after", "after/before"])
        for role, names in (("controller", CONTROLLER_STEPS), ("worker", WORKER_STEPS)):
            print(f"\n-n {workers}, {role}'s steps (a worker's: the mean over the workers), "
                  "seconds")
            print_table([{"step": name, "before": median(before, role, name),
                          "after": median(after, role, name)} for name in names],
                        ["step", "before", "after"])
        print(f"\nwhat a worker imports first, by step (after): {after[0]['imports']}")
        figures["runs"][f"n{workers}"] = {"before": before, "after": after}
    return figures


if __name__ == "__main__":
    main()
