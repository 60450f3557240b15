"""One rule for which record of a task a results file holds for it, wherever the file is read:
the last one written (`records.latest_per_task`). --humanfix-resume, the baseline, `merge`,
`compare` and the reports take the same record of a file that holds two of one task."""

from __future__ import annotations

import json
from pathlib import Path

from test_reporting_compare import run

from pytest_humanfix.jsonl import jsonl_bytes
from pytest_humanfix.protocol import record_fingerprint, without_model
from pytest_humanfix.records import Record, latest_per_task, read_records
from pytest_humanfix.reporting.cli import main
from pytest_humanfix.reporting.gates import load_baseline
from pytest_humanfix.reporting.merge import merge
from pytest_humanfix.session.resume import load_finished

TASKS = ["Python/0", "Python/1"]
SHARD = {"index": 1, "count": 1, "selection": "s", "selected": 2, "tasks": TASKS}


def made(run_id: str, fixed_in: dict[str, int | None]) -> list[Record]:
    """A run's records: each task fixed in the round given (None: not fixed)."""
    return [{**record, "run_id": run_id, "language": "python", "shard": SHARD}  # type: ignore
            for record in run("repair", fixed_in, [100] * 4)]


def test_resume_and_every_reader_take_a_tasks_last_record(tmp_path: Path, capsys):
    earlier = made("run-a", {"Python/0": None, "Python/1": 0})
    [later] = made("run-b", {"Python/0": 1})
    results = tmp_path / "results.jsonl"
    results.write_bytes(jsonl_bytes([*earlier, later]))
    one_per_task = [later, earlier[1]]
    assert latest_per_task(read_records(results, bad_lines="raise")) == one_per_task
    fingerprint = {"python": record_fingerprint(later)}
    assert load_baseline(results, {"python": without_model(fingerprint["python"])}) == \
        {"Python/0": later, "Python/1": earlier[1]}
    merged, _ = merge([results])
    assert merged == one_per_task
    other = tmp_path / "other.jsonl"
    other.write_bytes(jsonl_bytes(earlier))
    assert main(["compare", str(results), str(other), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    compared = json.loads((tmp_path / "out" / "compare.json").read_text(encoding="utf-8"))
    assert (compared["only_first"], compared["only_second"]) == (["Python/0"], [])
    # Last, as it rewrites the file: it keeps the same record, and that one alone.
    assert load_finished(results, fingerprint, TASKS) == {"Python/0": later,
                                                          "Python/1": earlier[1]}
    assert read_records(results, bad_lines="raise") == one_per_task
