"""What each task's own limit buys, and that it stops no honest candidate. Method and figures:
docs/trust.md, "Timeouts that hold under load".

`replay`: the replies of a recorded run (by default the H200's of 2026-12-04, qwen-coder 0.5B:
21 of 164 fixed, three of them looping) replayed through `--humanfix-model replay:` against the
canonical control, both `-n WORKERS`, alternated round by round; their ratio, the replay's fixed
count, and where its task time goes (the executions that timed out against all the others).
With `--before COMMIT` the same pair runs on that commit's tree too, in the same rounds.

`controls`: each language's canonical control (`-n WORKERS`) beside a load: CPU burners on
every core, or (`--beside control`) the Python canonical control run again and again. Counts,
per language, the tasks fixed and counted apart, the graded runs that timed out first and were
re-run, any that timed out for good, and the closest a passing run came to its limit.

    python benchmarks/harness/bench_task_limits.py replay [--replies PATH] [--rounds 3] \
        [--before COMMIT] [--json PATH]
    python benchmarks/harness/bench_task_limits.py controls [--languages python,js,...] \
        [--beside burners|control] [--json PATH]
"""

from __future__ import annotations

import gzip
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import (
    REPO,
    add_dataset_argument,
    benchmark_parser,
    exported,
    project_run,
    tree_env,
    write_json,
)

from pytest_humanfix.languages import LANGUAGES, NAMES

H200_REPLIES = REPO / "benchmarks" / "records" / "qwen-coder-0.5b-h200" / "warm.jsonl.gz"
BURN = "while True:\n    pass\n"


def unpacked(path: Path, folder: Path) -> Path:
    """A replay file as the plugin reads it: plain JSON lines."""
    if path.suffix != ".gz":
        return path.resolve()
    plain = folder / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    return plain


def figures_of(seconds: float, records: list[dict]) -> dict[str, Any]:
    """A run's wall seconds, its fixed count, and its task time split between the tasks whose
    graded run timed out (first or for good) and the others."""
    timed_out = [r for r in records if r["verdict"] and (r["verdict"]["status"] == "timeout"
                                                         or r["verdict"]["rerun"])]
    others = [r for r in records if r not in timed_out]
    return {"wall_seconds": round(seconds, 2), "tasks": len(records),
            "fixed": sum(r["outcome"] == "fixed" for r in records),
            "timed_out": sorted(r["task_id"] for r in timed_out),
            "timed_out_task_seconds": round(sum(r["seconds"] for r in timed_out), 2),
            "other_task_seconds": round(sum(r["seconds"] for r in others), 2),
            "limits": sorted({(r["time_limit"]["seconds"], r["verdict"]["limit"])
                              for r in timed_out})}


def replay(args: Any, folder: Path) -> dict[str, Any]:
    replies = unpacked(args.replies, folder)
    trees = {"now": REPO}
    if args.before:
        trees["before"] = exported(args.before, folder / "tree-before")
    runs = {"canonical": ["--humanfix-model", "canonical"],
            "replay": ["--humanfix-model", f"replay:{replies}"]}
    # Calibration read from the cache and the bytecode written in every round alike.
    for name, tree in trees.items():
        project_run(folder / f"warm-up-{name}", [*runs["canonical"], "-n", str(args.workers)],
                    args.dataset, tree=tree)
    rounds: dict[str, list[dict[str, Any]]] = {f"{tree} {run}": [] for tree in trees
                                               for run in runs}
    for number in range(args.rounds):
        for tree_name, tree in trees.items():
            for run, arguments in runs.items():
                seconds, records = project_run(
                    folder / f"{tree_name}-{run}-{number}", [*arguments, "-n", str(args.workers)],
                    args.dataset, tree=tree)
                rounds[f"{tree_name} {run}"].append(figures_of(seconds, records))
    result: dict[str, Any] = {"replies": str(args.replies), "workers": args.workers,
                              "runs": rounds}
    print(f"{'tree':<7} {'canonical s':>11} {'replay s':>8} {'ratio':>6} {'fixed':>6}  "
          "task s of the timed-out, of the others; first limit and the verdict's")
    for tree in trees:
        ratios = [r["wall_seconds"] / c["wall_seconds"]
                  for c, r in zip(rounds[f"{tree} canonical"], rounds[f"{tree} replay"],
                                  strict=True)]
        result[f"{tree} ratio median"] = round(statistics.median(ratios), 2)
        for canonical, replayed, ratio in zip(rounds[f"{tree} canonical"],
                                              rounds[f"{tree} replay"], ratios, strict=True):
            print(f"{tree:<7} {canonical['wall_seconds']:>11.2f} {replayed['wall_seconds']:>8.2f}"
                  f" {ratio:>6.2f} {replayed['fixed']:>3}/{replayed['tasks']}  "
                  f"{replayed['timed_out_task_seconds']:.1f} s ({len(replayed['timed_out'])}), "
                  f"{replayed['other_task_seconds']:.1f} s; {replayed['limits']}")
        print(f"{tree}: median ratio {result[f'{tree} ratio median']} over {args.rounds} rounds")
    return result


class Load:
    """What runs beside the controls: CPU burners, or the Python canonical control again and
    again (its own reports in a folder of their own)."""

    def __init__(self, kind: str, folder: Path, dataset: Path, workers: int) -> None:
        self.kind, self.folder, self.dataset, self.workers = kind, folder, dataset, workers
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> Load:
        if self.kind == "burners":
            self.processes = [subprocess.Popen([sys.executable, "-c", BURN])
                              for _ in range(os.cpu_count() or 1)]
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / "pytest.ini").write_text("[pytest]\n")
            loop = (f"while true; do {sys.executable} -m pytest -q -p no:cacheprovider "
                    f"--humanfix-model canonical -n {self.workers} >/dev/null 2>&1; done")
            self.processes = [subprocess.Popen(["bash", "-c", loop], cwd=self.folder,
                                               env=tree_env(self.dataset),
                                               start_new_session=True)]
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            if self.kind == "burners":
                process.kill()
            else:  # the loop and the run it is in, their own session's group: pytest ends it
                os.killpg(process.pid, signal.SIGTERM)
            process.wait()


def controls(args: Any, folder: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"beside": args.beside, "workers": args.workers, "languages": {}}
    with Load(args.beside, folder / "load", args.dataset, args.workers):
        for name in args.languages.split(","):
            data = args.dataset.parent / f"humanevalpack-{name}.jsonl"
            seconds, records = project_run(folder / name, [
                "--humanfix-model", "canonical", f"--humanfix-dataset={data}",
                "-n", str(args.workers)], args.dataset)
            known = set(LANGUAGES[name].known_failures)
            scored = [r for r in records if r["task_id"] not in known]
            passed = [r for r in records if r["verdict"] and r["verdict"]["status"] == "passed"]
            closest = max(passed, key=lambda r: r["verdict"]["seconds"] / r["verdict"]["limit"])
            row = {"wall_seconds": round(seconds, 1), "tasks": len(records),
                   "fixed": sum(r["outcome"] == "fixed" for r in scored), "scored": len(scored),
                   "counted_apart": sorted(known),
                   "errors": sum(r["outcome"] == "error" for r in records),
                   "rerun": sorted(r["task_id"] for r in records if r["verdict"]
                                   and r["verdict"]["rerun"]),
                   "timed_out": sorted(r["task_id"] for r in records if r["verdict"]
                                       and r["verdict"]["status"] == "timeout"),
                   "closest": {"task_id": closest["task_id"],
                               "seconds": closest["verdict"]["seconds"],
                               "limit": closest["verdict"]["limit"],
                               "first_limit": closest["time_limit"]["seconds"]},
                   "load_average": round(os.getloadavg()[0], 2)}
            result["languages"][name] = row
            print(f"{name}: {row['fixed']}/{row['scored']} fixed ({len(known)} counted apart), "
                  f"{row['errors']} errors, {len(row['rerun'])} re-run after a first timeout "
                  f"{row['rerun']}, {len(row['timed_out'])} timed out for good; closest "
                  f"{row['closest']}; {row['wall_seconds']} s, load {row['load_average']}",
                  flush=True)
    return result


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("mode", choices=("replay", "controls"))
    add_dataset_argument(parser)
    parser.add_argument("-n", "--workers", type=int, default=2)
    parser.add_argument("--replies", type=Path, default=H200_REPLIES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", metavar="COMMIT",
                        help="also run the replay pair on this commit's tree")
    parser.add_argument("--languages", default=",".join(NAMES))
    parser.add_argument("--beside", choices=("burners", "control"), default="burners")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="humanfix-limits-") as scratch:
        figures = (replay if args.mode == "replay" else controls)(args, Path(scratch))
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
