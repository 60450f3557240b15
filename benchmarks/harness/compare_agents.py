"""Do two runs' agents say the same? Task by task: the model's replies, in order, and the outcome
(and the round that fixed it), read from each run's results JSONL; exits 1 when any task differs.
Method: docs/benchmarks.md, "How each script measures"; figures: docs/own-agent.md, "The proof".

    python benchmarks/harness/compare_agents.py FIRST/humanfix.jsonl SECOND/humanfix.jsonl \
        [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py's folder
from common import benchmark_parser, write_json

from pytest_humanfix.jsonl import read_jsonl
from pytest_humanfix.records import latest_per_task
from pytest_humanfix.reporting.gates import first_computed_by


def replies(record: dict[str, Any]) -> list[str]:
    """The model's replies: the attempts that were asked of a model (a brought agent's run of
    code it did not get from the model has no prompt)."""
    return [attempt["reply"] for attempt in record.get("attempts") or [] if attempt.get("prompt")]


def differences(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    said = []
    if replies(first) != replies(second):
        said.append(f"replies differ ({len(replies(first))} and {len(replies(second))})")
    for key in ("outcome", "fixed_round", "flags"):
        if first.get(key) != second.get(key):
            said.append(f"{key}: {first.get(key)!r} and {second.get(key)!r}")
    return said


def main() -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    arguments = parser.parse_args()
    runs = [{record["task_id"]: record
             for record in latest_per_task(read_jsonl(path, bad_lines="raise"))}
            for path in (arguments.first, arguments.second)]
    said: dict[str, list[str]] = {}
    for task_id in sorted(set(runs[0]) | set(runs[1]), key=lambda t: int(t.rsplit("/", 1)[1])):
        if task_id not in runs[0] or task_id not in runs[1]:
            said[task_id] = ["only in one run"]
        elif found := differences(runs[0][task_id], runs[1][task_id]):
            said[task_id] = found
        if task_id in said:
            print(f"{task_id}: {'; '.join(said[task_id])}")
    differ = len(said)
    fixed = [sum(r["outcome"] == "fixed" for r in run.values()) for run in runs]
    count = sum(len(replies(r)) for r in runs[0].values())
    print(f"{len(runs[0])} and {len(runs[1])} tasks, {count} replies in the first run; "
          f"fixed {fixed[0]} and {fixed[1]}; {differ} tasks differ")
    write_json(arguments.json, {"tasks": [len(run) for run in runs],
                                "replies_in_first": count, "fixed": fixed,
                                "tasks_differ": differ, "differences": said},
               {"first": first_computed_by(runs[0].values()),
                "second": first_computed_by(runs[1].values())})
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
