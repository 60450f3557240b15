"""Whether runs on a GPU repeat their replies, and what determinism costs: the same command run
several times with `--humanfix-deterministic` on or off, every run's replies compared with the first
run's, in one session on one machine. Method: docs/benchmarks.md, "How each script measures";
figures: docs/trust.md, "Same command, same number".

    python benchmarks/engine/bench_gpu_determinism.py --model ~/gpu/hf [-n 16] [--runs on,on,off]
        [--max N] [--mps] [--layout in-process|serve] [--deadline 420] --out DIR [--json PATH]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from bench_kernel_sets import generation_rate
from common import REPO, agreement, benchmark_parser, print_table, read_records, write_json

from pytest_humanfix.reporting.gates import first_computed_by


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("-n", "--workers", type=int, default=16)
    parser.add_argument("--runs", default="on,on,off",
                        help="--humanfix-deterministic of each run, in order")
    parser.add_argument("--max", type=int, help="only the first N tasks")
    parser.add_argument("--mps", action="store_true", help="start the GPU's MPS daemon first")
    parser.add_argument("--layout", choices=("in-process", "serve"), default="in-process",
                        help="a copy of the model per worker, or one shared engine per GPU")
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="start no run after this many seconds of the script")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.monotonic()
    if args.mps:
        subprocess.run(["nvidia-cuda-mps-control", "-d"], check=False)
    rows: list[dict[str, Any]] = []
    first: list[dict[str, Any]] = []
    for index, setting in enumerate(args.runs.split(",")):
        if time.monotonic() - started > args.deadline:
            print(f"run {index} ({setting}) not started: past --deadline", flush=True)
            break
        folder = args.out / f"run{index}-{setting}"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--humanfix-model", args.model, "-n", str(args.workers),
                   f"--humanfix-{args.layout}", f"--humanfix-deterministic={setting}",
                   f"--humanfix-report-dir={folder}",
                   *(["--humanfix-max", str(args.max)] if args.max else [])]
        began = time.monotonic()
        done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - began
        print("\n".join(done.stdout.splitlines()[-6:]), flush=True)
        records = read_records(folder / "humanfix.jsonl")
        first = first or records
        same = agreement(first, records)
        rows.append({"run": index, "deterministic": setting, "wall_s": round(wall, 1),
                     "tasks": len(records), "fixed": sum(r["outcome"] == "fixed"
                                                         for r in records),
                     "tokens_per_s": round(generation_rate(records), 1),
                     "replies_differ": same["differ"], "replies": same["replies"],
                     "outcomes_differ": same["lost"] + same["gained"],
                     "computed_by": first_computed_by(records)})
        print(json.dumps(rows[-1]), flush=True)
    print_table(rows, ["run", "deterministic", "wall_s", "tasks", "fixed", "tokens_per_s",
                       "replies", "replies_differ", "outcomes_differ"])
    write_json(args.json, {"model": args.model, "workers": args.workers, "layout": args.layout,
                           "runs": [{k: v for k, v in row.items() if k != "computed_by"}
                                    for row in rows]},
               {f"run {row['run']}": row["computed_by"] for row in rows})


if __name__ == "__main__":
    main()
