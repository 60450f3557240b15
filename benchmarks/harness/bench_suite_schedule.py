"""The test suite's wall time on 2 workers under xdist's `load` scheduler and under the suite's
own schedule (tests/conftest.py: the slow tests first, then work stealing), replayed from the
durations a real `pytest tests -n 2 --junitxml=PATH` measured. Method: docs/benchmarks.md, "How
each script measures"; figures: docs/benchmarks.md, "The test suite's schedule".

    python benchmarks/harness/bench_suite_schedule.py --junit PATH [--json PATH]
"""

from __future__ import annotations

import heapq
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import REPO, benchmark_parser, write_json

WORKERS = 2
# Loaded into the collecting pytest as a plugin (-p), this module writes the order pytest
# collects in, before tests/conftest.py reorders it, to the file this names: a line per test,
# its node id after "slow " or "other ".
ORDER_FILE = "HUMANFIX_BENCH_COLLECTED_ORDER"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if ORDER_FILE in os.environ:
        Path(os.environ[ORDER_FILE]).write_text("\n".join(
            f"{'slow' if item.get_closest_marker('slow') else 'other'} {item.nodeid}"
            for item in items))


def collected() -> tuple[list[str], list[str], int]:
    """The node ids `pytest tests` collects here: in collection order, in the order the suite
    runs them (tests/conftest.py's), and how many are slow."""
    with tempfile.TemporaryDirectory() as folder:
        order = Path(folder) / "order"
        env = {**os.environ, ORDER_FILE: str(order), "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q",
                               "-p", "no:cacheprovider", "-p", Path(__file__).stem],
                              cwd=REPO, capture_output=True, text=True, check=True, env=env)
        kinds_and_nodes = [line.split(" ", 1) for line in order.read_text().splitlines()]
    suite_order = [line.strip() for line in done.stdout.splitlines() if "::" in line]
    return ([node for _, node in kinds_and_nodes], suite_order,
            sum(kind == "slow" for kind, _ in kinds_and_nodes))


def durations(junit: Path) -> dict[str, float]:
    """Seconds per node id; a test case's classname is its module path with dots (and its class)."""
    seconds: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next(cut for cut in range(len(parts), 0, -1)
                      if (REPO / ("/".join(parts[:cut]) + ".py")).is_file())
        node = "::".join(["/".join(parts[:module]) + ".py", *parts[module:], case.get("name", "")])
        seconds[node] = seconds.get(node, 0.0) + float(case.get("time", 0))
    return seconds


def replay(times: list[float], choose: Callable[[list[list[int]], list[int], int, float], None],
           queues: list[list[int]], pending: list[int]) -> float:
    """Each worker runs the head of its queue; when one finishes, `choose` refills queues."""
    events = [(0.0, worker) for worker in range(WORKERS)]
    running: list[int | None] = [None] * WORKERS
    end = 0.0
    while events:
        now, worker = heapq.heappop(events)
        end = max(end, now)
        finished = running[worker]
        if finished is not None:
            queues[worker].remove(finished)
            running[worker] = None
            choose(queues, pending, worker, times[finished])
        elif not queues[worker]:
            choose(queues, pending, worker, 0.0)
        if queues[worker]:
            running[worker] = queues[worker][0]
            heapq.heappush(events, (now + times[queues[worker][0]], worker))
    return end


def load(times: list[float]) -> float:
    """xdist 3.8's LoadScheduling: a quarter of each worker's share first; a worker below its
    minimum is topped up from the front, unless its last test was long and two are left."""
    pending = list(range(len(times)))
    first = max(min(len(times) // WORKERS // 4, len(times)), 2)
    queues = []
    for _ in range(WORKERS):
        queues.append(pending[:first])
        del pending[:first]

    def top_up(queues: list[list[int]], pending: list[int], worker: int, last: float) -> None:
        low, high = (max(2, len(pending) // WORKERS // 4), max(2, len(pending) // WORKERS // 2))
        if pending and len(queues[worker]) < low and not (last >= 0.1
                                                          and len(queues[worker]) >= 2):
            count = high - len(queues[worker])
            queues[worker].extend(pending[:count])
            del pending[:count]

    return replay(times, top_up, queues, pending)


def work_stealing(times: list[float]) -> float:
    """xdist 3.8's WorkStealingScheduling: an even split in order; a worker left with nothing
    takes the second half of the longest queue (but for the test it is running)."""
    half = (len(times) + 1) // 2
    queues = [list(range(half)), list(range(half, len(times)))]

    def steal(queues: list[list[int]], pending: list[int], worker: int, last: float) -> None:
        if queues[worker]:
            return
        donor = max(range(WORKERS), key=lambda other: len(queues[other]))
        count = (len(queues[donor]) - 1) // 2
        if count:
            queues[worker] = queues[donor][-count:]
            del queues[donor][-count:]

    return replay(times, steal, queues, [])


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--junit", type=Path, required=True,
                        help="the junit.xml of a `pytest tests -n 2 --junitxml=PATH` run")
    arguments = parser.parse_args()
    seconds = durations(arguments.junit)
    order, suite_order, slow = collected()
    missing = [node for node in order if node not in seconds]
    if missing:
        sys.exit(f"{len(missing)} collected tests have no time in {arguments.junit} (the first: "
                 f"{missing[0]}): give the junit.xml of a run of this checkout's tests")
    in_order = [seconds[node] for node in order]
    suite = [seconds[node] for node in suite_order]
    figures = {"tests": len(order), "slow_tests": slow,
               "summed_seconds": round(sum(in_order)), "longest_seconds": round(max(in_order)),
               "load_seconds": round(load(in_order)),
               "suite_schedule_seconds": round(work_stealing(suite)),
               "work_stealing_only_seconds": round(work_stealing(in_order))}
    figures["ratio_suite_to_load"] = round(figures["suite_schedule_seconds"]
                                           / figures["load_seconds"], 3)
    for name, value in figures.items():
        print(f"{name:28} {value}")
    write_json(arguments.json, figures)


if __name__ == "__main__":
    main()
