"""What --humanfix-tests plus costs: a full canonical control run with it against one without.
Method: docs/benchmarks.md, "How each script measures"; figures: docs/trust.md, "HumanEvalFix+".

    python benchmarks/harness/bench_plus.py [--dataset PATH] [--plus PATH] [--max N] [-n WORKERS]
        [--json PATH]
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.datafiles import PACKAGED  # noqa: E402


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


def compile_cost(args: argparse.Namespace) -> dict[str, Any]:
    """CPU time to compile each task's HumanEval+ program (its inputs and outputs are Python
    literals, compiled once per execution), with the canonical solution as the candidate: in
    all, and the task that takes longest."""
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
    return {"programs": len(times), "cpu_seconds": sum(t[0] for t in times),
            "slowest_task": most[2], "slowest_cpu_seconds": most[0],
            "slowest_characters": most[1]}


def executions(folder: Path) -> list[dict[str, Any]]:
    """The plus run's HumanEval+ executions, slowest first."""
    records = [json.loads(line) for line in (folder / "humanfix.jsonl").read_text().splitlines()]
    return sorted(({"task_id": r["task_id"], "seconds": r["plus_verdict"]["seconds"],
                    "status": r["plus_verdict"]["status"]} for r in records),
                  key=lambda row: row["seconds"], reverse=True)


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--plus", default=PACKAGED)
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
        ran = executions(root / "plus")
    figures = summary["plus"]
    compiling = compile_cost(args)
    print(f"canonical control, {summary['tasks']['total']} tasks, -n {args.workers}: "
          f"hidden {hidden:.1f} s, plus {plus:.1f} s, ratio {plus / hidden:.2f}")
    print(f"HumanEval+ executions: {sum(row['seconds'] for row in ran):.1f} s in all; slowest "
          + ", ".join(f"{row['task_id']} {row['seconds']:.1f} s ({row['status']})"
                      for row in ran[:8]))
    print(f"compiling the HumanEval+ programs: {compiling['cpu_seconds']:.2f} s of CPU for all "
          f"{compiling['programs']}, at most {compiling['slowest_cpu_seconds'] * 1000:.0f} ms "
          f"({compiling['slowest_task']}, {compiling['slowest_characters']:,} characters)")
    known = [row["task_id"] for row in figures["known_failures"]]
    weak = [row["task_id"] for row in figures["weak_test_fixes"]]
    print(f"pass@1 {figures['pass_at_1']['value']:.4f}, pass@1+ "
          f"{figures['pass_at_1_plus']['value']:.4f} "
          f"({figures['fixed_plus']}/{figures['pass_at_1_plus']['tasks']}), known failures "
          f"{known}, weak-test fixes {weak}")
    write_json(args.json, {
        "tasks": summary["tasks"]["total"], "workers": args.workers, "hidden_seconds": hidden,
        "plus_seconds": plus, "ratio_plus_hidden": plus / hidden,
        "plus_execution_seconds": sum(row["seconds"] for row in ran),
        "slowest_executions": ran[:8], "compiling": compiling,
        "pass_at_1": figures["pass_at_1"]["value"],
        "pass_at_1_plus": figures["pass_at_1_plus"]["value"],
        "fixed_plus": figures["fixed_plus"], "known_failures": known,
        "weak_test_fixes": weak})


if __name__ == "__main__":
    main()
