"""Per-execution cost of the sandbox: fresh interpreter against the warm executor, under the bwrap
and the process layers, measured in one run on one small canonical program. Method:
docs/benchmarks.md, "How each script measures".

    python benchmarks/harness/bench_sandbox.py [--dataset PATH] [--runs 50] [--json PATH]
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.program import build_program

CONFIGS = [("bwrap", "fresh"), ("bwrap", "warm"), ("process", "fresh"), ("process", "warm")]


def median_ms(layer: str, executor: str, program: str, runs: int) -> float:
    sandbox = make_sandbox(layer, executor, Limits()).sandbox
    warm_up = sandbox.run(program)  # starts the warm executor, fills the page cache
    assert warm_up.passed, warm_up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        verdict = sandbox.run(program)
        times.append(time.perf_counter() - started)
        assert verdict.passed and verdict.executor == executor, verdict
    return 1000 * statistics.median(times)


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    task = next(t for t in load_tasks(str(args.dataset)) if t.task_id == "Python/0")
    program = build_program(task.canonical_code, task.test, task.test_setup)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"median wall ms per execution over {args.runs} runs of {task.task_id}'s canonical "
          "program:")
    ms = {}
    for layer, executor in CONFIGS:
        ms[layer, executor] = median_ms(layer, executor, program, args.runs)
        print(f"  {layer:<8} {executor:<6} {ms[layer, executor]:8.1f} ms")
    ratios = {}
    for layer in ("bwrap", "process"):
        ratios[f"fresh_warm_{layer}"] = ms[layer, "fresh"] / ms[layer, "warm"]
        print(f"fresh / warm under {layer}: {ratios[f'fresh_warm_{layer}']:.1f}x")
    for executor in ("fresh", "warm"):
        ratios[f"bwrap_process_{executor}"] = ms["bwrap", executor] / ms["process", executor]
        print(f"bwrap / process with {executor}: {ratios[f'bwrap_process_{executor}']:.2f}x")
    write_json(args.json, {"task": task.task_id, "runs": args.runs,
                           "median_ms": {f"{layer} {executor}": value
                                         for (layer, executor), value in ms.items()},
                           "ratios": ratios})


if __name__ == "__main__":
    main()
