from __future__ import annotations

import json

from pytest_humanfix.report import JsonlWriter, read_jsonl, summarize


def record(task_id: str, bug_type: str, outcome: str) -> dict:
    return {"task_id": task_id, "bug_type": bug_type, "outcome": outcome}


def test_summary_scores_fixed_over_scored_and_counts_errors_apart():
    summary = summarize([record("a", "x", "fixed"), record("b", "x", "unfixed"),
                         record("c", "y", "fixed"), record("d", "y", "error")])
    assert (summary.fixed, summary.unfixed, summary.errors) == (2, 1, 1)
    assert summary.pass_at_1 == 2 / 3
    rows = {r.bug_type: (r.fixed, r.scored, r.errors) for r in summary.by_bug_type}
    assert rows == {"x": (1, 2, 0), "y": (1, 1, 1)}


def test_every_line_is_on_disk_as_soon_as_it_is_written(tmp_path):
    writer = JsonlWriter(tmp_path / "out" / "r.jsonl")
    writer.open()
    writer.write(record("a", "x", "fixed"))
    # Read by another handle before close: the line is already there, whole.
    assert read_jsonl(tmp_path / "out" / "r.jsonl") == [record("a", "x", "fixed")]
    writer.close()


def test_a_new_run_keeps_the_previous_results_aside(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("old", "x", "fixed")) + "\n")
    writer = JsonlWriter(path)
    writer.open()
    writer.close()
    assert path.read_text() == ""
    assert read_jsonl(tmp_path / "r.jsonl.prev") == [record("old", "x", "fixed")]


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("a", "x", "fixed")) + "\n" + '{"task_id": "b", "outc')
    assert read_jsonl(path) == [record("a", "x", "fixed")]
