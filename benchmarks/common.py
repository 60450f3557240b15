"""What the benchmarks share: where the dataset is, and one full control run through pytest."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "data" / "humanevalpack-python.jsonl"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def add_dataset_argument(parser: argparse.ArgumentParser) -> None:
    # Absolute: the runs start in scratch folders, where a relative path would name nothing.
    parser.add_argument("--dataset", type=lambda text: Path(text).resolve(),
                        default=Path(os.environ.get("HUMANFIX_DATASET") or DEFAULT_DATASET))


def cpu_seconds(who: int = resource.RUSAGE_CHILDREN) -> float:
    """User and system CPU seconds used so far by `who`. On a machine shared with other work,
    CPU time moves much less with the load than wall time does."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def canonical_run(dataset: Path, workers: int, folder: Path) -> tuple[float, float, list[dict]]:
    """Wall seconds and CPU seconds of the control run, `pytest --humanfix-model canonical
    -n WORKERS` from the checkout root (so the checkout's configuration applies), its reports in
    FOLDER; and the records it wrote."""
    env = dict(os.environ, HUMANFIX_DATASET=str(dataset),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started, cpu_before = time.perf_counter(), cpu_seconds()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--humanfix-model", "canonical", "-n", str(workers),
                    f"--humanfix-report-dir={folder}"],
                   cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu_before
    records = [json.loads(line) for line in (folder / "humanfix.jsonl").read_text().splitlines()]
    return seconds, cpu, records
