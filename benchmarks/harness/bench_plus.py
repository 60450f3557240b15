"""What --humanfix-tests plus costs: a full canonical control run with it against one without.

Both runs go through pytest in subprocesses, one after the other, on the same tasks and the same
report folder kind, with calibration cached beforehand (a first session with plus, collecting only
and not timed, times EvalPlus's reference on each HumanEval+ program once per machine, as every
later run reuses). Printed: both wall times and their ratio, the plus run's HumanEval+ executions
(their total and the slowest), the cost of compiling the programs, and pass@1 / pass@1+ of the
plus run. (No CPU times: the sandbox's executions run outside the runs' process tree.)

    python benchmarks/bench_plus.py [--dataset PATH] [--plus PATH] [--max N] [-n WORKERS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_dataset_argument

PLUS = "/work/shared/data/humanevalplus-v0.1.10-originfmt.jsonl.gz"


def run(args: argparse.Namespace, folder: Path, plus: bool, *extra: str) -> tuple[float, dict]:
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
               "-q", "--humanfix-model", "canonical", "--humanfix-dataset", str(args.dataset),
               "--humanfix-report-dir", str(folder), "-n", str(args.workers)]
    if args.max:
        command += ["--humanfix-max", str(args.max)]
    if plus:
        command += ["--humanfix-tests", "plus", "--humanfix-plus-dataset", args.plus]
    started = time.perf_counter()
    subprocess.run([*command, *extra], cwd=folder, stdout=subprocess.DEVNULL, env=os.environ,
                   check=False)
    seconds = time.perf_counter() - started
    summary = folder / "summary.json"
    return seconds, json.loads(summary.read_text()) if summary.exists() else {}


def compile_cost(args: argparse.Namespace) -> str:
    """CPU time to compile each task's HumanEval+ program (its inputs and outputs are Python
    literals, compiled once per execution), with the canonical solution as the candidate."""
    from pytest_humanfix.dataset import load_tasks
    from pytest_humanfix.plus.data import load_plus

    tasks = load_tasks(str(args.dataset))
    plus = load_plus(args.plus, tasks)
    times = []
    for task in tasks:
        program = plus.tasks[task.task_id].program(task.canonical_code, [])
        started = time.process_time()
        compile(program, task.task_id, "exec")
        times.append((time.process_time() - started, len(program), task.task_id))
    most = max(times)
    return (f"compiling the HumanEval+ programs: {sum(t[0] for t in times):.2f} s of CPU for "
            f"all {len(times)}, at most {most[0] * 1000:.0f} ms ({most[2]}, {most[1]:,} "
            f"characters)")


def slowest(folder: Path, count: int = 8) -> str:
    records = [json.loads(line) for line in (folder / "humanfix.jsonl").read_text().splitlines()]
    times = sorted(((r["plus_verdict"]["seconds"], r["plus_verdict"]["status"], r["task_id"])
                    for r in records), reverse=True)
    total = sum(seconds for seconds, _, _ in times)
    return (f"HumanEval+ executions: {total:.1f} s in all; slowest "
            + ", ".join(f"{task} {seconds:.1f} s ({status})"
                        for seconds, status, task in times[:count]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dataset_argument(parser)
    parser.add_argument("--plus", default=PLUS)
    parser.add_argument("--max", type=int, default=0)
    parser.add_argument("-n", "--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("warm", "hidden", "plus"):
            (root / name).mkdir()
        run(args, root / "warm", True, "--collect-only")  # calibration, cached per machine
        hidden, _ = run(args, root / "hidden", plus=False)
        plus, summary = run(args, root / "plus", plus=True)
        executions = slowest(root / "plus")
    figures = summary["plus"]
    print(f"canonical control, {summary['tasks']['total']} tasks, -n {args.workers}: "
          f"hidden {hidden:.1f} s, plus {plus:.1f} s, ratio {plus / hidden:.2f}")
    print(executions)
    print(compile_cost(args))
    print(f"pass@1 {figures['pass_at_1']['value']:.4f}, pass@1+ "
          f"{figures['pass_at_1_plus']['value']:.4f} "
          f"({figures['fixed_plus']}/{figures['pass_at_1_plus']['tasks']}), known failures "
          f"{[row['task_id'] for row in figures['known_failures']]}, weak-test fixes "
          f"{[row['task_id'] for row in figures['weak_test_fixes']]}")


if __name__ == "__main__":
    main()
