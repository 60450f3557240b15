"""Wall and CPU time of one control task from the checkout root, against a bare pytest run of one
trivial test and `python -c pass`, and with the plugins the checkout leaves out loaded again.
Method: docs/benchmarks.md, "How each script measures"; figures: docs/benchmarks.md, "Fixed costs".

    python benchmarks/harness/bench_single_task.py [--runs 7] [--dataset PATH] [--json PATH]
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, add_dataset_argument, benchmark_parser, cpu_seconds, write_json

# What the checkout's pyproject adds to every run, given to the bare side explicitly, and what
# loads those plugins again (a later -p wins).
CHECKOUT_ADDOPTS = ["-p", "no:langsmith_plugin", "-p", "no:anyio"]
LEFT_OUT_PLUGINS = ["-p", "langsmith_plugin", "-p", "anyio"]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the command and every process it waited for."""
    started, cpu_before = time.perf_counter(), cpu_seconds()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, cpu_seconds() - cpu_before


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as folder:
        bare = Path(folder) / "bare"
        bare.mkdir()
        (bare / "pytest.ini").write_text("[pytest]\n")
        (bare / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        task = [sys.executable, "-m", "pytest", "--humanfix-model", "canonical",
                f"--humanfix-dataset={args.dataset}", "-k", "has_close_elements",
                "-p", "no:randomly", f"--humanfix-report-dir={folder}/reports"]
        sides = {
            "one control task": (task, REPO),
            "same, all plugins": ([*task, *LEFT_OUT_PLUGINS], REPO),
            "bare pytest": ([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                             *CHECKOUT_ADDOPTS, "-p", "no:randomly"], bare),
            "python -c pass": ([sys.executable, "-c", "pass"], bare),
        }
        before = load()
        for command, cwd in sides.values():  # warm the file cache once
            timed(command, cwd, env)
        times: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, (command, cwd) in sides.items():
                wall, used = timed(command, cwd, env)
                times[name].append(wall)
                cpu[name].append(used)
        after = load()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average (1, 5, 15 min) {before} before, "
          f"{after} after; PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    for name, median in medians.items():
        spread = ", ".join(f"{value:.2f}" for value in sorted(times[name]))
        print(f"{name:>17}: median {median:6.2f} s wall ({spread}), "
              f"{cpu_medians[name]:5.2f} s CPU, over {args.runs} runs")
    task_median = medians["one control task"]
    wall_ratio = task_median / medians["bare pytest"]
    cpu_ratio = cpu_medians["one control task"] / cpu_medians["bare pytest"]
    plugins_ratio = medians["same, all plugins"] / task_median
    print(f"ratio one control task / bare pytest: {wall_ratio:.2f} wall, {cpu_ratio:.2f} CPU")
    print(f"ratio with langsmith's and anyio's plugins loaded / without: {plugins_ratio:.2f} "
          f"({medians['same, all plugins'] - task_median:+.2f} s)")
    write_json(args.json, {"runs": args.runs, "median_wall_seconds": medians,
                           "median_cpu_seconds": cpu_medians,
                           "ratio_task_bare_pytest_wall": wall_ratio,
                           "ratio_task_bare_pytest_cpu": cpu_ratio,
                           "ratio_all_plugins_checkout_plugins": plugins_ratio,
                           "load_before": before, "load_after": after})


if __name__ == "__main__":
    main()
