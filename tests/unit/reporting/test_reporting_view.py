"""The run's page (reporting/view.py) as text: the records' JSON survives any text a reply
holds, a full six-language run's page stays smaller than its JSONL, the flipped tasks come
first with both runs, and `humanfix-report view` writes it. The browser's side:
test_reporting_view_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from view_runs import HOSTILE, full_run, task_record

from pytest_humanfix.datafiles import humanevalpack
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.gates import compare
from pytest_humanfix.reporting.summary import build, times_from_records
from pytest_humanfix.reporting.view import page, script_json, tasks_of

DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


def page_of(records, baseline=None) -> str:
    comparison = compare(records, baseline) if baseline is not None else None
    return page(build(records, times_from_records(records), comparison), records, baseline)


def test_script_json_holds_any_text_without_ending_the_script_element():
    text = HOSTILE + "<!-- \u2028 \u2029 & ]]>"
    held = script_json({"reply": text})
    assert "<" not in held and ">" not in held and "\u2028" not in held
    assert json.loads(held) == {"reply": text}


def test_a_hostile_reply_is_data_in_the_page_never_markup():
    records = [task_record("python", 0, None, 2, reply=HOSTILE)]
    text = page_of(records)
    data = DATA.findall(text)
    assert len(data) == 1, "the reply's </script> ended the data element"
    replies = [a["reply"] for a in json.loads(data[0])["tasks"][0]["attempts"]]
    assert replies == [HOSTILE, HOSTILE]
    assert "document.body.dataset.pwned" not in text.replace(data[0], "")


def test_a_full_run_page_is_smaller_than_its_results_file():
    records = full_run()
    assert len(records) == 6 * 164 * 4
    text = page_of(records)
    jsonl = "".join(json.dumps(r) + "\n" for r in records)
    tasks = json.loads(DATA.findall(text)[0])["tasks"]
    assert len(tasks) == 3936
    assert {len(t["attempts"]) for t in tasks} == {1, 2, 3, 4}
    assert len(text.encode()) < len(jsonl.encode()), "the page holds more than the records"


def test_the_flipped_tasks_come_first_with_both_runs_final_code_and_feedback():
    baseline = {r["task_id"]: r for r in [task_record("python", n, 0, 2) for n in range(4)]}
    records = [task_record("python", 0, 0, 2), task_record("python", 1, None, 2),
               task_record("python", 2, 1, 2), task_record("python", 3, None, 2)]
    tasks = tasks_of(records, {}, baseline)
    assert [(t["id"], t["flip"]) for t in tasks] == [
        ("Python/1", "regression"), ("Python/3", "regression"), ("Python/0", ""),
        ("Python/2", "")]
    first = tasks[0]
    assert first["baseline"]["outcome"] == "fixed" and first["outcome"] == "unfixed"
    assert first["feedback"].startswith("The tests failed")
    assert first["baseline"]["code"] == baseline["Python/1"]["code"]
    text = page_of(records, baseline)
    assert '<table class="gate" id="gate">' in text
    assert "exact McNemar one-sided p" in text and "computed by (baseline)" in text


def test_humanfix_report_view_writes_the_page(tmp_path: Path, capsys):
    run, base = tmp_path / "run.jsonl", tmp_path / "base.jsonl"
    run.write_text(json.dumps(task_record("python", 1, None, 2)) + "\n")
    base.write_text(json.dumps(task_record("python", 1, 0, 2)) + "\n")
    out = tmp_path / "page" / "view.html"
    assert report_main(["view", str(run), "--baseline", str(base), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    tasks = json.loads(DATA.findall(out.read_text())[0])["tasks"]
    assert [(t["id"], t["flip"]) for t in tasks] == [("Python/1", "regression")]
    assert ("<tr><th>gate baseline</th><td>held: 1 regression(s), 0 improvement(s) against the "
            "baseline: exact McNemar one-sided p=0.5") in out.read_text()
    assert report_main(["view", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl is not a file" in capsys.readouterr().err


def test_a_page_rebuilt_from_records_of_the_packaged_data_holds_the_buggy_code(tmp_path: Path):
    label = humanevalpack("python").label
    assert label.startswith("packaged humanevalpack-python (sha256 ")

    def buggy_on_page(dataset: str) -> str | None:
        run, out = tmp_path / "run.jsonl", tmp_path / "index.html"
        run.write_text(json.dumps({**task_record("python", 0, None, 2), "dataset": dataset}))
        assert report_main(["view", str(run), "--out", str(out)]) == 0
        [task] = json.loads(DATA.findall(out.read_text())[0])["tasks"]
        return task["buggy"]

    buggy = buggy_on_page(label)
    # HumanEvalFix's Python/0 drops the abs() around the distance.
    assert buggy is not None and "def has_close_elements(" in buggy
    assert "distance = elem - elem2\n" in buggy
    # A packaged file of other content than this package's: not this copy's code.
    assert buggy_on_page("packaged humanevalpack-python (sha256 0000)") is None


def test_a_known_failure_is_no_flip_and_an_error_not_fixed_on_the_page_as_in_the_gate():
    fixed = [task_record("python", n, 0, 2) for n in range(3)]
    baseline = {r["task_id"]: r for r in fixed}
    baseline["Python/1"] = {**baseline["Python/1"], "known_failure": "flaky reference"}
    baseline["Python/3"] = {**task_record("python", 3, None, 2), "outcome": "error"}
    error = {"outcome": "error", "error": "crash"}
    records = [task_record("python", 0, None, 2), task_record("python", 1, None, 2),
               {**task_record("python", 2, None, 2), **error},
               {**task_record("python", 3, None, 2), "outcome": "unfixed"}]
    flips = {t["id"]: t["flip"] for t in tasks_of(records, {}, baseline)}
    assert compare(records, baseline).regressions == ["Python/0", "Python/2"]
    # Python/3: an error then, not fixed now: both not fixed, no flip.
    assert flips == {"Python/0": "regression", "Python/1": "", "Python/2": "regression",
                     "Python/3": ""}


def test_a_page_of_a_run_without_a_model_names_none_as_the_terminal_does():
    text = page_of([task_record("python", 0, 0, 2) | {"model": None}])
    assert "<h1>HumanEvalFix: none named (the agent brings its own)</h1>" in text
    assert "None" not in text.split('<script type="application/json"')[0]
