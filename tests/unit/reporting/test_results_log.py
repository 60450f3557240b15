from __future__ import annotations

import json
import types

import pytest

from pytest_humanfix import jsonl as jsonl_module
from pytest_humanfix.jsonl import (
    CUT_MARK,
    TEXT_CAP_BYTES,
    JsonlError,
    JsonlWriter,
    json_line,
    read_jsonl,
    storable,
    storable_text,
)
from pytest_humanfix.reporting.junit import junit_properties
from pytest_humanfix.reporting.summary import build
from pytest_humanfix.reporting.terminal import pass_line


def record(task_id: str, bug_type: str, outcome: str) -> dict:
    return {"task_id": task_id, "bug_type": bug_type, "outcome": outcome}


def test_summary_scores_fixed_over_scored_with_errors_not_fixed_and_counted_apart():
    summary = build([record("a", "x", "fixed"), record("b", "x", "unfixed"),
                     record("c", "y", "fixed"), record("d", "y", "error")], {})
    tasks = summary["tasks"]
    assert (tasks["fixed"], tasks["unfixed"], tasks["errors"], tasks["scored"]) == (2, 1, 1, 4)
    assert summary["pass_at_1"]["value"] == 2 / 4
    rows = {r["bug_type"]: (r["fixed"], r["scored"], r["errors"]) for r in summary["by_bug_type"]}
    assert rows == {"x": (1, 2, 0), "y": (1, 2, 1)}


def test_with_samples_pass_at_1_is_the_unbiased_estimate_in_every_view():
    # First samples fix 2 of 4 tasks (50%), but over all samples 3 of 8 pass: 37.5%.
    records = [dict(record("a", "x", "fixed"), n=2, n_fixed=2),
               dict(record("b", "x", "fixed"), n=2, n_fixed=1),
               dict(record("c", "y", "unfixed"), n=2, n_fixed=0),
               dict(record("d", "y", "unfixed"), n=2, n_fixed=0)]
    summary = build(records, {})
    assert summary["pass_at_1"]["value"] == 0.375
    assert dict(junit_properties(summary))["humanfix_pass_at_1"] == "0.3750"
    headline = pass_line(summary)
    assert headline.startswith("pass@1 = 37.5% ") and "first sample fixed 2/4" in headline
    assert "50.0%" not in headline


def test_every_line_is_on_disk_as_soon_as_it_is_written(tmp_path):
    writer = JsonlWriter(tmp_path / "out" / "r.jsonl")
    writer.open()
    writer.write(record("a", "x", "fixed"))
    # Read by another handle before close: the line is already there, whole.
    assert read_jsonl(tmp_path / "out" / "r.jsonl", "raise") == [record("a", "x", "fixed")]
    writer.close()


def test_fsync_at_most_once_a_second_and_at_the_end(tmp_path, monkeypatch):
    synced: list[int] = []
    clock = [100.0]
    monkeypatch.setattr(jsonl_module, "os", types.SimpleNamespace(fsync=synced.append))
    monkeypatch.setattr(jsonl_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    writer = JsonlWriter(tmp_path / "r.jsonl")
    writer.open()
    for task in "abc":
        writer.write(record(task, "x", "fixed"))
    assert len(synced) == 1  # the first line; the next two within the same second
    clock[0] += JsonlWriter.SYNC_SECONDS
    writer.write(record("d", "x", "fixed"))
    assert len(synced) == 2
    writer.close()
    assert len(synced) == 3
    assert [r["task_id"] for r in read_jsonl(tmp_path / "r.jsonl", "raise")] == list("abcd")


def test_a_new_run_keeps_the_previous_results_aside(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("old", "x", "fixed")) + "\n")
    writer = JsonlWriter(path)
    writer.open()
    writer.close()
    assert path.read_text() == ""
    assert read_jsonl(tmp_path / "r.jsonl.prev", "raise") == [record("old", "x", "fixed")]


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("a", "x", "fixed")) + "\n" + '{"task_id": "b", "outc')
    assert read_jsonl(path, "torn-tail") == [record("a", "x", "fixed")]
    assert read_jsonl(path, "skip") == [record("a", "x", "fixed")]
    with pytest.raises(JsonlError, match="line 2"):
        read_jsonl(path, "raise")


def test_a_bad_line_before_the_end_is_refused_unless_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("not json\n" + json.dumps(record("a", "x", "fixed")) + "\n")
    with pytest.raises(JsonlError, match="line 1"):
        read_jsonl(path, "torn-tail")
    assert read_jsonl(path, "skip") == [record("a", "x", "fixed")]


def test_a_text_is_stored_escaped_where_utf8_cannot_hold_it_and_cut_past_the_cap():
    assert storable_text("plain\x00\x1b\x85\ufffd") == ("plain\x00\x1b\x85\ufffd", None)
    assert storable_text("a\ud800b\udcff") == ("a\\ud800b\\udcff", None)
    whole = "é" * TEXT_CAP_BYTES  # two bytes each: twice the cap
    kept, size = storable_text(whole)
    assert size == 2 * TEXT_CAP_BYTES
    assert kept == "é" * (TEXT_CAP_BYTES // 2) + CUT_MARK.format(kept=TEXT_CAP_BYTES,
                                                                  whole=2 * TEXT_CAP_BYTES)
    # A cut falls between characters, never inside one.
    assert storable_text("x" + "é" * TEXT_CAP_BYTES)[0].startswith("x" + "é" * (TEXT_CAP_BYTES
                                                                               // 2 - 1) + "\n")


def test_storable_reaches_every_text_of_a_row_and_names_the_cut_ones():
    row = {"reply": "x" * (TEXT_CAP_BYTES + 1), "n": 3, "ok": True, "none": None,
           "attempts": [{"verdict": {"stdout": "\ud800", "stderr": "y" * (TEXT_CAP_BYTES * 2)}}],
           "odd\udcff": ("\udcfe",)}
    kept, cut = storable(row)
    assert cut == {"/reply": TEXT_CAP_BYTES + 1,
                   "/attempts/0/verdict/stderr": 2 * TEXT_CAP_BYTES}
    assert kept["attempts"][0]["verdict"]["stdout"] == "\\ud800"
    assert (kept["n"], kept["ok"], kept["none"], kept["odd\\udcff"]) == (3, True, None,
                                                                          ["\\udcfe"])
    json_line(kept).encode("utf-8")


def test_any_text_is_written_as_one_line_that_reads_back_the_same(tmp_path):
    # What a record holding raw text gives: the writer never raises, whatever a string holds,
    # and a reader that splits on str.splitlines still sees one line per row.
    row = {"task_id": "t", "text": "a\ud800 b\x85c\u2028d\u2029e\x00\n\r\x1e"}
    writer = JsonlWriter(tmp_path / "r.jsonl")
    writer.open()
    writer.write(row)
    writer.close()
    text = (tmp_path / "r.jsonl").read_bytes().decode("utf-8")
    assert len(text.splitlines()) == 1
    assert read_jsonl(tmp_path / "r.jsonl", bad_lines="raise") == [row]
