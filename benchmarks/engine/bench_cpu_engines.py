"""The CPU engines on one real model: the same tasks through in-process transformers, `transformers
serve` and the llama.cpp server, each at its best worker count on this machine, then how far the
engines agree. Method: docs/benchmarks.md, "How each script measures"; figures: docs/benchmarks.md,
"Engines compared on SmolLM2".

    python benchmarks/engine/bench_cpu_engines.py [--dataset PATH] [--tasks 20] [--keep DIR]
        [--json PATH]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import (
    add_dataset_argument,
    agreement,
    benchmark_parser,
    project_run,
    reused,
    write_json,
)

from pytest_humanfix.reporting.gates import first_computed_by
from pytest_humanfix.reporting.stats import mcnemar_exact

# name -> (extra pytest arguments, workers): the worker count that suits each engine on 2
# cores. In-process copies need a core each; transformers serve batches concurrent requests;
# llama.cpp runs an engine per worker on a core each at -n 2, and two slots per engine, decoded
# together, at -n 4 (`serve.cpu_layout`).
LLAMACPP = ("--humanfix-serve", "--humanfix-engine", "llamacpp")
ENGINES = {
    "transformers": ((), 2),
    "transformers-serve": (("--humanfix-serve", "--humanfix-engine", "transformers"), 4),
    "llamacpp": (LLAMACPP, 2),
    "llamacpp-slots": (LLAMACPP, 4),
}


def run_engine(name: str, dataset: Path, tasks: int, max_new_tokens: int,
               folder: Path) -> tuple[float, list[dict]]:
    arguments, workers = ENGINES[name]
    return project_run(folder / name, ["--humanfix-model", "smollm2", "--humanfix-max",
                                       str(tasks), "--humanfix-max-new-tokens",
                                       str(max_new_tokens), "-n", str(workers), *arguments],
                       dataset)


def compared(reference: list[dict], other: list[dict]) -> dict[str, Any]:
    """`agreement`, with McNemar's exact two-sided p on the flips."""
    counts: dict[str, Any] = agreement(reference, other)
    counts["mcnemar_p"] = mcnemar_exact(counts["lost"], counts["gained"], "two-sided")
    return counts


def described(counts: dict[str, Any]) -> str:
    """`compared` in words."""
    lost, gained = counts["lost"], counts["gained"]
    return (f"{counts['differ']}/{counts['replies']} replies differ, {lost + gained} outcomes "
            f"flip ({lost} fixed only by the reference, {gained} only by this engine), "
            f"{counts['errors']} with an error, McNemar two-sided p = "
            f"{counts['mcnemar_p']:.3f}")


def main() -> None:
    parser = benchmark_parser(__doc__)
    add_dataset_argument(parser)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="comma-separated subset of " + ", ".join(ENGINES))
    parser.add_argument("--workers", action="append", default=[], metavar="ENGINE=N",
                        help="run ENGINE at -n N instead of its default worker count")
    parser.add_argument("--keep", type=Path, help="keep each engine's project folder here")
    parser.add_argument("--reuse", action="store_true",
                        help="take an engine's finished run from the --keep folder instead of "
                             "running it again (its wall time is the one its summary recorded)")
    args = parser.parse_args()

    names = [n for n in args.engines.split(",") if n]
    for choice in args.workers:
        name, _, count = choice.partition("=")
        ENGINES[name] = (ENGINES[name][0], int(count))
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        results = {name: reused(folder / name) if args.reuse and args.keep
                   and (folder / name / "reports" / "summary.json").is_file()
                   else run_engine(name, args.dataset, args.tasks, args.max_new_tokens, folder)
                   for name in names}
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; smollm2, "
          f"first {args.tasks} tasks, greedy, {args.max_new_tokens} new tokens at most")
    figures: dict[str, dict[str, Any]] = {}
    for name, (seconds, records) in results.items():
        tokens = sum(r["tokens"]["completion"] for r in records)
        fixed = sum(r["outcome"] == "fixed" for r in records)
        errors = sum(r["outcome"] == "error" for r in records)
        figures[name] = {"workers": ENGINES[name][1], "wall_seconds": seconds,
                         "completion_tokens": tokens, "tokens_per_s": tokens / seconds,
                         "seconds_per_task": seconds / len(records), "tasks": len(records),
                         "fixed": fixed, "errors": errors}
        print(f"{name:20s} -n {ENGINES[name][1]}: {seconds:7.1f} s wall, "
              f"{tokens / seconds:6.1f} tokens/s, {seconds / len(records):5.1f} s/task, "
              f"{fixed}/{len(records) - errors} fixed, {errors} errors")
    if "transformers" in results:
        reference_seconds, reference = results["transformers"]
        for name, (seconds, records) in results.items():
            if name != "transformers":
                counts = compared(reference, records)
                figures[name]["vs_transformers"] = {
                    "wall_ratio_faster": reference_seconds / seconds, **counts}
                print(f"{name} vs transformers: wall ratio {reference_seconds / seconds:.2f}x "
                      f"faster; {described(counts)}")
    write_json(args.json, {"model": "smollm2", "tasks": args.tasks,
                           "max_new_tokens": args.max_new_tokens, "engines": figures},
               {name: first_computed_by(records) for name, (_, records) in results.items()})

if __name__ == "__main__":
    main()
