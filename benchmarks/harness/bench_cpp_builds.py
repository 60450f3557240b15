"""What C++'s builds cost: executions of the canonical control's sample tasks with the worker's
precompiled header (as the driver runs) against the same with it set aside (g++ then reads the
include helper and the wire as text), interleaved task by task in one sandbox; and the tests'
build alone, the most a per-worker cache of it could save an execution that runs tests the
worker has built before (a repair round; never a control, where each task's tests run once).
Method: docs/benchmarks.md, "How each script measures"; figures: docs/languages.md, "Known
failures and the controls".

    python benchmarks/harness/bench_cpp_builds.py [--dataset PATH] [--every 8] [--json PATH]
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, cpu_seconds, write_json

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import language
from pytest_humanfix.languages.cpp import PRELUDE_NAME
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

CPP = language("cpp")


def executed(sandbox: ToolchainSandbox, task: Task) -> float:
    """Wall seconds of one execution of the task's reference solution, both processes and
    their compiles (their CPU time is not the harness's to read: bwrap's namespaces reap
    them)."""
    started = time.perf_counter()
    verdict = sandbox.run(CPP.job(task.prompt + task.canonical_solution, task.test, task))
    assert verdict.passed, verdict.stderr[-2000:]
    return time.perf_counter() - started


def tests_build(sandbox: ToolchainSandbox, task: Task, folder: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the tests' compile step alone, as the sandbox runs it."""
    job = CPP.job(task.prompt + task.canonical_solution, task.test, task)
    for name, text in json.loads(job.tests.program)["files"].items():
        (folder / name).write_text(text, encoding="utf-8")
    step = CPP.steps(sandbox.cache, "tests")[0]
    started, cpu = time.perf_counter(), cpu_seconds()
    subprocess.run(step.argv, cwd=folder, check=True, capture_output=True)
    return time.perf_counter() - started, cpu_seconds() - cpu


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--every", type=int, default=8, help="every Nth task (default 8: "
                        "the controls' sample)")
    args = parser.parse_args()
    tasks = load_tasks(str(args.dataset.parent / "humanevalpack-cpp.jsonl"), "cpp")
    chosen = tasks[::args.every]
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    sandbox = ToolchainSandbox(layer, CPP, Limits(timeout=CPP.timeout), cgroups)
    started = time.perf_counter()
    sandbox.start()
    warm_seconds = time.perf_counter() - started
    header = sandbox.cache / (PRELUDE_NAME + ".gch")
    aside = header.with_suffix(".aside")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; layer {layer.name}; {len(chosen)} tasks; the worker's "
          f"precompiled header built in {warm_seconds:.2f} s")
    arms: dict[str, list[float]] = {"precompiled": [], "parsed": []}
    alone: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="humanfix-bench-cpp-") as scratch:
        for index, task in enumerate(chosen):
            # Alternate which arm goes first, so that neither always meets a warmer machine.
            for arm in (("precompiled", "parsed") if index % 2 == 0
                        else ("parsed", "precompiled")):
                if arm == "parsed":
                    header.rename(aside)
                try:
                    arms[arm].append(executed(sandbox, task))
                finally:
                    if arm == "parsed":
                        aside.rename(header)
            alone.append(tests_build(sandbox, task, Path(scratch)))
    sandbox.shutdown()
    figures: dict[str, float | int] = {"tasks": len(chosen), "warm_seconds": warm_seconds}
    for arm, walls in arms.items():
        figures[f"{arm}_wall_median"] = statistics.median(walls)
        print(f"an execution, {arm} header: {figures[f'{arm}_wall_median']:.2f} s (median)")
    ratio = statistics.median(p / q for p, q in zip(arms["precompiled"], arms["parsed"],
                                                     strict=True))
    figures["precompiled_over_parsed_wall_median"] = ratio
    print(f"precompiled / parsed, median of the {len(chosen)} pairs: {ratio:.2f}")
    figures["tests_build_wall_median"] = statistics.median(row[0] for row in alone)
    figures["tests_build_cpu_median"] = statistics.median(row[1] for row in alone)
    print(f"the tests' build alone, precompiled header: {figures['tests_build_wall_median']:.2f}"
          f" s wall, {figures['tests_build_cpu_median']:.2f} s CPU (medians)")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
