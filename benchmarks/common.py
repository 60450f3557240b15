"""What the benchmarks share: where the dataset is, and one full control run through pytest."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "data" / "humanevalpack-python.jsonl"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def add_dataset_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", type=Path,
                        default=Path(os.environ.get("HUMANFIX_DATASET") or DEFAULT_DATASET))


def canonical_run(dataset: Path, workers: int, folder: Path) -> tuple[float, list[dict]]:
    """Wall seconds of `pytest --humanfix-model canonical -n WORKERS` in a fresh project, and
    the records it wrote."""
    project = folder / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, HUMANFIX_DATASET=str(dataset),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--humanfix-model", "canonical", "-n", str(workers)],
                   cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    records = [json.loads(line) for line in
               (project / "reports" / "humanfix.jsonl").read_text().splitlines()]
    return seconds, records
