"""Per-execution cost of each language in the sandbox: a worker's first execution (its compile
caches built then) against the median once they are warm. Method: docs/benchmarks.md, "How each
script measures"; figures: docs/languages.md, "Known failures and the controls".

    python benchmarks/harness/bench_languages.py [--dataset PATH] [--runs 10] [--json PATH]
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import add_dataset_argument, benchmark_parser, write_json

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.languages import LANGUAGES
from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Job, Limits, Sandbox


def timed(sandbox: Sandbox, job: Job) -> float:
    started = time.perf_counter()
    verdict = sandbox.run(job)
    seconds = time.perf_counter() - started
    assert verdict.passed, verdict.stderr[-2000:]
    return seconds


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    choice = make_sandbox("auto", "auto", Limits())
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
          f"layer {choice.sandbox.layer.name}, {args.runs} warm runs per language")
    print(f"{'language':<8}  {'first (cold caches)':>19}  {'warm median':>11}  {'ratio':>5}")
    seconds: dict[str, dict[str, float]] = {}
    for name, language in LANGUAGES.items():
        path = args.dataset.parent / f"humanevalpack-{name}.jsonl"
        task = load_tasks(str(path), name)[0]
        code = language.prompt_base(task, "tests") + task.canonical_solution
        job = language.job(code, task.test, task)
        if name == "python":
            sandbox: Sandbox = choice.sandbox
            first = timed(sandbox, job)
        else:
            started = time.perf_counter()
            toolchain = choice.for_toolchain(language, language.timeout)  # builds the caches
            first = time.perf_counter() - started + timed(toolchain, job)
            sandbox = toolchain
        warm = statistics.median(timed(sandbox, job) for _ in range(args.runs))
        print(f"{name:<8}  {first:>17.2f} s  {warm:>9.2f} s  {first / warm:>5.1f}")
        seconds[name] = {"first_seconds": first, "warm_median_seconds": warm,
                         "ratio_first_warm": first / warm}
        if sandbox is not choice.sandbox:
            sandbox.shutdown()
    choice.sandbox.shutdown()
    write_json(args.json, {"layer": choice.sandbox.layer.name, "warm_runs": args.runs,
                           "languages": seconds})


if __name__ == "__main__":
    main()
