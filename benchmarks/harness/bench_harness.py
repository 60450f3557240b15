"""Wall time of the full canonical control run through the plugin (`pytest -n 2`) against a plain
loop of fresh interpreters with no sandbox, as a home-made script runs the 164 programs. Method:
docs/benchmarks.md, "How each script measures".

    python benchmarks/harness/bench_harness.py [--dataset PATH] [--workers 2] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, canonical_run, write_json

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.sandbox.program import build_program


def plain_loop(dataset: Path) -> tuple[float, int]:
    tasks = load_tasks(str(dataset))
    passed = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for task in tasks:
            path = Path(folder) / "program.py"
            path.write_text(build_program(task.canonical_code, task.test))
            done = subprocess.run([sys.executable, str(path)], capture_output=True, timeout=60)
            passed += done.returncode == 0
    return time.perf_counter() - started, passed


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    loop_seconds, loop_passed = plain_loop(args.dataset)
    with tempfile.TemporaryDirectory() as folder:
        plugin_seconds, _, records = canonical_run(args.dataset, args.workers, Path(folder))
    fixed = sum(r["outcome"] == "fixed" for r in records)
    layers = ", ".join(sorted({str(r["sandbox"]) for r in records}))
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"plain sequential loop, fresh interpreters, no sandbox: {loop_seconds:7.2f} s "
          f"({loop_passed}/164 passed)")
    print(f"plugin, pytest -n {args.workers}, sandbox {layers}:           {plugin_seconds:7.2f} s "
          f"({fixed}/{len(records)} fixed)")
    print(f"ratio plugin / plain loop: {plugin_seconds / loop_seconds:.2f}")
    write_json(args.json, {"workers": args.workers, "sandbox": layers,
                           "plain_loop_seconds": loop_seconds, "plain_loop_passed": loop_passed,
                           "plugin_seconds": plugin_seconds, "plugin_fixed": fixed,
                           "tasks": len(records),
                           "ratio_plugin_plain_loop": plugin_seconds / loop_seconds},
               first_computed_by(records))


if __name__ == "__main__":
    main()
