"""How far a reference solution's time moves between calibrations, on a quiet machine and on a
loaded one: every reference program of each language timed as the controller times it
(session/calibration.measure, in the sandbox a run uses), round after round, quiet and loaded
rounds alternating (loaded: CPU burners on every core beside it). Each round's times are set
against the first quiet round's, the calibration a run would have kept, and each pair of limit
defaults (floor, factor) is scored by the executions it would have stopped: first runs past
the limit, and re-runs past the re-run's. Figures: docs/trust.md, "Timeouts that hold under
load".

    python benchmarks/harness/bench_reference_noise.py [--languages python,js,...] \
        [--rounds 3] [--burners 2] [--json PATH]
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, write_json

from pytest_humanfix.dataset import PACKAGED, load_tasks
from pytest_humanfix.languages import LANGUAGES, NAMES
from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Limits, Sandbox
from pytest_humanfix.sandbox.rerun import rerun_limit
from pytest_humanfix.session.calibration import measure, task_limit

# The (floor, factor) pairs scored: EvalPlus's current and last release's defaults among them.
CANDIDATES = [(0.5, 4.0), (1.0, 4.0), (1.0, 6.0), (1.0, 10.0), (2.0, 4.0), (4.0, 4.0)]
BURN = "while True:\n    pass\n"


def burners(count: int) -> list[subprocess.Popen]:
    started = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(count)]
    time.sleep(0.5)  # spinning before the first reference is timed
    return started


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
        process.wait()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def language_rounds(name: str, rounds: int, count: int, sandbox: Sandbox
                    ) -> list[dict[str, Any]]:
    """`rounds` quiet and `rounds` loaded timings of every reference, alternating."""
    tasks = load_tasks(PACKAGED, name)
    cap = LANGUAGES[name].timeout
    timed = []
    for index in range(2 * rounds):
        loaded = index % 2 == 1
        load = burners(count) if loaded else []
        try:
            began = time.perf_counter()
            seconds = measure(tasks, sandbox, cap)
            took = time.perf_counter() - began
        finally:
            stop(load)
        timed.append({"loaded": loaded, "seconds": seconds, "wall": round(took, 1),
                      "load_average": round(os.getloadavg()[0], 2)})
        print(f"  {name} round {index + 1} ({'loaded' if loaded else 'quiet'}): "
              f"{took:.1f} s, load {os.getloadavg()[0]:.2f}", flush=True)
    return timed


def spread(timed: list[dict[str, Any]], cap: float) -> dict[str, Any]:
    """Each later round against the first quiet one: how far a time moved (ratio), and how
    many executions each candidate pair of defaults would have stopped."""
    calibration = timed[0]["seconds"]
    figures: dict[str, Any] = {
        "calibration_median": round(statistics.median(calibration.values()), 4),
        "calibration_max": round(max(calibration.values()), 4)}
    for condition, loaded in (("quiet", False), ("loaded", True)):
        rounds = [r["seconds"] for r in timed[1:] if r["loaded"] == loaded]
        if not rounds:
            continue
        ratios = [r[task] / calibration[task] for r in rounds for task in r
                  if calibration[task] > 0]
        figures[condition] = {
            "rounds": len(rounds),
            "median_seconds": round(statistics.median(t for r in rounds for t in r.values()), 4),
            "max_seconds": round(max(t for r in rounds for t in r.values()), 4),
            "ratio_median": round(statistics.median(ratios), 3),
            "ratio_p99": round(quantile(ratios, 0.99), 3),
            "ratio_max": round(max(ratios), 3),
            "worst": max((r[task] / calibration[task], task) for r in rounds for task in r
                          if calibration[task] > 0)[1]}
        scored = {}
        for floor, factor in CANDIDATES:
            first = rerun = 0
            least_margin = float("inf")
            for r in rounds:
                for task, seconds in r.items():
                    limit = task_limit(calibration[task], factor, floor, cap).seconds
                    least_margin = min(least_margin, limit / max(seconds, 1e-6))
                    first += seconds > limit
                    rerun += seconds > rerun_limit(limit, cap)
            scored[f"floor {floor:g}, factor {factor:g}"] = {
                "past_first_limit": first, "past_rerun_limit": rerun,
                "least_margin": round(least_margin, 2)}
        figures[condition]["defaults"] = scored
    return figures


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--languages", default=",".join(NAMES))
    parser.add_argument("--rounds", type=int, default=3, help="quiet rounds, and as many loaded")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1,
                        help="CPU burners beside a loaded round (default: one a core)")
    args = parser.parse_args()
    choice = make_sandbox("auto", "auto", Limits())
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
          f"layer {choice.sandbox.layer.name}, Python executor {choice.sandbox.executor}; "
          f"{args.rounds} quiet and {args.rounds} loaded rounds ({args.burners} burners)")
    results: dict[str, Any] = {}
    for name in args.languages.split(","):
        language = LANGUAGES[name]
        sandbox: Sandbox = choice.sandbox if name == "python" else \
            choice.for_toolchain(language, language.timeout)
        timed = language_rounds(name, args.rounds, args.burners, sandbox)
        results[name] = {"spread": spread(timed, language.timeout), "rounds": timed}
        if sandbox is not choice.sandbox:
            sandbox.shutdown()
        figures = results[name]["spread"]
        print(f"{name}: calibration median {figures['calibration_median']} s, "
              f"max {figures['calibration_max']} s")
        for condition in ("quiet", "loaded"):
            if condition not in figures:
                continue
            row = figures[condition]
            print(f"  {condition}: median {row['median_seconds']} s, max {row['max_seconds']} s;"
                  f" against the calibration median x{row['ratio_median']}, p99 "
                  f"x{row['ratio_p99']}, max x{row['ratio_max']} ({row['worst']})")
            for pair, score in row["defaults"].items():
                print(f"    {pair}: {score['past_first_limit']} past the first limit, "
                      f"{score['past_rerun_limit']} past the re-run's, least margin "
                      f"x{score['least_margin']}")
    choice.sandbox.shutdown()
    write_json(args.json, {"layer": choice.sandbox.layer.name,
                           "python_executor": choice.sandbox.executor,
                           "rounds": args.rounds, "burners": args.burners,
                           "languages": results})


if __name__ == "__main__":
    main()
