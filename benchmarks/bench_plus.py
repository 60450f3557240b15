"""What --humanfix-tests plus costs: a full canonical control run with it against one without.

Both runs go through pytest in subprocesses, one after the other, on the same tasks and the same
report folder kind, with calibration cached beforehand (a first run with plus, not timed, times
EvalPlus's reference on each HumanEval+ program once per machine, as every later run reuses).
Printed: both wall times, their ratio, and pass@1 / pass@1+ of the plus run.

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


def run(args: argparse.Namespace, folder: Path, plus: bool) -> tuple[float, dict]:
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
               "-q", "--humanfix-model", "canonical", "--humanfix-dataset", str(args.dataset),
               "--humanfix-report-dir", str(folder), "-n", str(args.workers)]
    if args.max:
        command += ["--humanfix-max", str(args.max)]
    if plus:
        command += ["--humanfix-tests", "plus", "--humanfix-plus-dataset", args.plus]
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, stdout=subprocess.DEVNULL, env=os.environ, check=False)
    seconds = time.perf_counter() - started
    return seconds, json.loads((folder / "summary.json").read_text())


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
        run(args, root / "warm", plus=True)  # calibration, cached per machine
        hidden, _ = run(args, root / "hidden", plus=False)
        plus, summary = run(args, root / "plus", plus=True)
    figures = summary["plus"]
    print(f"canonical control, {summary['tasks']['total']} tasks, -n {args.workers}: "
          f"hidden {hidden:.1f} s, plus {plus:.1f} s, ratio {plus / hidden:.2f}")
    print(f"pass@1 {figures['pass_at_1']['value']:.4f}, pass@1+ "
          f"{figures['pass_at_1_plus']['value']:.4f} "
          f"({figures['fixed_plus']}/{figures['pass_at_1_plus']['tasks']}), known failures "
          f"{[row['task_id'] for row in figures['known_failures']]}, weak-test fixes "
          f"{[row['task_id'] for row in figures['weak_test_fixes']]}")


if __name__ == "__main__":
    main()
