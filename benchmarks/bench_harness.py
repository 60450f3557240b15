"""Wall time of the full canonical control run through the plugin against a plain loop.

The plain loop is what a home-made script does: write each of the 164 programs (same prelude,
candidate and test) to a file and run it with `python` in a fresh interpreter, one after the
other, with no sandbox. The plugin run is `pytest --humanfix-model canonical -n 2`.

    python benchmarks/bench_harness.py [--dataset PATH] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.sandbox import build_program

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "data" / "humanevalpack-python.jsonl"


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


def plugin_run(dataset: Path, workers: int) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "pytest.ini").write_text("[pytest]\n")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--humanfix-model", "canonical",
             f"--humanfix-dataset={dataset}", "-n", str(workers), "-q", "-p", "no:cacheprovider"],
            cwd=folder, capture_output=True, text=True, env=dict(os.environ))
        seconds = time.perf_counter() - started
    line = next((l for l in done.stdout.splitlines() if l.startswith("pass@1")), done.stdout[-500:])
    return seconds, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path,
                        default=Path(os.environ.get("HUMANFIX_DATASET") or DEFAULT_DATASET))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    loop_seconds, loop_passed = plain_loop(args.dataset)
    plugin_seconds, pass_line = plugin_run(args.dataset, args.workers)
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"plain sequential loop, fresh interpreters, no sandbox: {loop_seconds:7.2f} s "
          f"({loop_passed}/164 passed)")
    print(f"plugin, pytest -n {args.workers}, sandboxed:                 {plugin_seconds:7.2f} s "
          f"({pass_line})")
    print(f"ratio plugin / plain loop: {plugin_seconds / loop_seconds:.2f}")


if __name__ == "__main__":
    main()
