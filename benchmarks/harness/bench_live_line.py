"""What the live progress line costs: the canonical control run (`pytest -n 2`) on a terminal,
where the line is redrawn after every task, against the same run under -q, where it is off,
alternated in one invocation after one unmeasured run; the ratio of their wall and CPU times.
Method: docs/benchmarks.md, "How each script measures".

    python benchmarks/harness/bench_live_line.py [--dataset PATH] [--runs 3] [--workers 2]
        [--json PATH]
"""

from __future__ import annotations

import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, add_dataset_argument, benchmark_parser, cpu_seconds, tree_env, write_json


def on_a_terminal(arguments: list[str], dataset: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of `pytest ARGUMENTS` from the checkout root with a pseudo-terminal
    as its output (util-linux `script`), and what it wrote there."""
    command = shlex.join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments])
    started, cpu_before = time.perf_counter(), cpu_seconds()
    done = subprocess.run(["script", "-qfec", command, "/dev/null"], cwd=REPO,
                          env=tree_env(dataset, COLUMNS="120"), capture_output=True,
                          check=False)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu_before
    # Decoded by hand: text mode would turn the line's carriage returns into newlines.
    written = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        raise SystemExit(f"pytest exited {done.returncode}:\n{written[-3000:]}")
    return seconds, cpu, written


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sides: dict[str, list[tuple[float, float]]] = {"live line": [], "-q (off)": []}
    with tempfile.TemporaryDirectory() as folder:
        # Once unmeasured: the first run on a machine times the canonical solutions, which
        # later runs read back (session/calibration.py).
        on_a_terminal(["--humanfix-model", "canonical", "-n", str(args.workers), "-q",
                       f"--humanfix-report-dir={Path(folder) / 'warm-up'}"], args.dataset)
        for run in range(args.runs):
            for side, extra in (("live line", []), ("-q (off)", ["-q"])):
                common = ["--humanfix-model", "canonical", "-n", str(args.workers),
                          f"--humanfix-report-dir={Path(folder) / f'{run}-{len(extra)}'}"]
                seconds, cpu, output = on_a_terminal([*common, *extra], args.dataset)
                drawn = output.count("\rhumanfix ")
                if (drawn > 0) != (side == "live line"):
                    raise SystemExit(f"{side}: the live line was drawn {drawn} time(s)")
                sides[side].append((seconds, cpu))
                print(f"run {run + 1} {side:>9}: {seconds:6.2f} s wall, {cpu:6.2f} s CPU"
                      + (f", line drawn {drawn} times" if drawn else ""))
    medians = {side: (statistics.median(s for s, _ in runs), statistics.median(c for _, c in runs))
               for side, runs in sides.items()}
    wall = medians["live line"][0] / medians["-q (off)"][0]
    cpu = medians["live line"][1] / medians["-q (off)"][1]
    print(f"ratio live line / off over {args.runs} run(s) each: wall {wall:.3f}, CPU {cpu:.3f}")
    write_json(args.json, {"runs": args.runs, "workers": args.workers,
                           "median_seconds": {side: m[0] for side, m in medians.items()},
                           "median_cpu_seconds": {side: m[1] for side, m in medians.items()},
                           "ratio_wall": wall, "ratio_cpu": cpu})


if __name__ == "__main__":
    main()
