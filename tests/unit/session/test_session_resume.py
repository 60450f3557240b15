"""--humanfix-resume's reading of a results file (session/resume): which records are finished,
how the file is repaired in place, and which files are refused, each with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humanfix.protocol import Fingerprint, RunProtocol, run_fingerprint
from pytest_humanfix.records import Record
from pytest_humanfix.session.resume import ResumeError, load_finished
from pytest_humanfix.settings import Settings

PROTOCOL = RunProtocol.of(Settings(model="m"), "python").to_json()
WANTED: dict[str, Fingerprint] = {"python": run_fingerprint("m", PROTOCOL, "hash")}


def record(task_id: str, outcome: str, **changes: object) -> Record:
    line = {"task_id": task_id, "outcome": outcome, "language": "python", "model": "m",
            "protocol": PROTOCOL, "dataset_hash": "hash", **changes}
    return line  # type: ignore[return-value]


def write(path: Path, *rows: Record, tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_no_file_is_nothing_finished(tmp_path):
    assert load_finished(tmp_path / "absent.jsonl", WANTED, ["Python/0"]) == {}
    assert not (tmp_path / "absent.jsonl").exists()


def test_scored_records_are_finished_and_the_file_is_left_as_it_was(tmp_path):
    rows = [record("Python/0", "fixed"), record("Python/1", "unfixed")]
    path = write(tmp_path / "r.jsonl", *rows)
    before = path.read_bytes()
    finished = load_finished(path, WANTED, ["Python/0", "Python/1"])
    assert finished == {"Python/0": rows[0], "Python/1": rows[1]}
    assert path.read_bytes() == before


def test_a_torn_last_line_is_cut_off(tmp_path):
    path = write(tmp_path / "r.jsonl", record("Python/0", "fixed"), tail='{"task_id": "Pyt')
    assert set(load_finished(path, WANTED, ["Python/0", "Python/1"])) == {"Python/0"}
    assert [r["task_id"] for r in lines(path)] == ["Python/0"]


def test_a_damaged_line_before_the_last_is_refused_naming_the_fix(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("not json\n" + json.dumps(record("Python/0", "fixed")) + "\n")
    with pytest.raises(ResumeError, match="line 1") as raised:
        load_finished(path, WANTED, ["Python/0"])
    assert "not a torn write" in str(raised.value) and "Remove the line" in str(raised.value)
    assert path.read_text().startswith("not json\n")  # a refused file is not touched


def test_an_error_record_of_a_selected_task_is_removed_so_it_runs_again(tmp_path):
    path = write(tmp_path / "r.jsonl", record("Python/0", "error", error="boom"),
                 record("Python/1", "fixed"), record("Python/2", "error"))
    finished = load_finished(path, WANTED, ["Python/0", "Python/1"])
    assert set(finished) == {"Python/1"}
    # Python/2 is not selected: its error record stays, as any record of another task does.
    assert [(r["task_id"], r["outcome"]) for r in lines(path)] == [
        ("Python/1", "fixed"), ("Python/2", "error")]


def test_a_tasks_record_is_its_last_as_every_reader_takes_it(tmp_path):
    first, second = record("Python/0", "unfixed"), record("Python/0", "fixed")
    path = write(tmp_path / "r.jsonl", first, second)
    assert load_finished(path, WANTED, ["Python/0"]) == {"Python/0": second}
    assert lines(path) == [second]


def test_a_finished_task_whose_last_record_is_an_error_runs_again(tmp_path):
    path = write(tmp_path / "r.jsonl", record("Python/0", "fixed"),
                 record("Python/0", "error", error="boom"))
    assert load_finished(path, WANTED, ["Python/0"]) == {}
    assert lines(path) == []


def test_a_record_of_another_language_names_the_option_that_resumes_it(tmp_path):
    path = write(tmp_path / "r.jsonl", record("JavaScript/0", "fixed", language="js"))
    with pytest.raises(ResumeError, match="record 1 \\(JavaScript/0\\) is of language js") as e:
        load_finished(path, WANTED, ["Python/0"])
    assert "--humanfix-language js" in str(e.value) and "--humanfix-jsonl" in str(e.value)


def test_a_record_of_another_protocol_says_what_differs(tmp_path):
    path = write(tmp_path / "r.jsonl", record("Python/0", "fixed"),
                 record("Python/1", "fixed", protocol={**PROTOCOL, "iters": 3}))
    with pytest.raises(ResumeError, match="record 2 \\(Python/1\\)") as raised:
        load_finished(path, WANTED, ["Python/0", "Python/1"])
    assert "iters: 3 there, 0 here" in str(raised.value)
    assert "Resume with the same options" in str(raised.value)


def test_a_record_of_another_model_is_refused(tmp_path):
    path = write(tmp_path / "r.jsonl", record("Python/0", "fixed", model="other"))
    with pytest.raises(ResumeError, match="model: 'other' there, 'm' here"):
        load_finished(path, WANTED, ["Python/0"])


def test_an_old_record_without_the_later_protocol_fields_still_resumes(tmp_path):
    # Written before prompt, strict and language were kept: read as made under their old values.
    old = {k: v for k, v in PROTOCOL.items() if k not in ("prompt", "strict", "language")}
    row = record("Python/0", "fixed", protocol=old)
    del row["language"]
    path = write(tmp_path / "r.jsonl", row)
    assert load_finished(path, WANTED, ["Python/0"]) == {"Python/0": row}


# Each late field both ways: the record's setting away from the run's default, and the run's
# away from the record's (where one side leaves the field out at its old value).
SETTINGS_APART = [
    ("agent", Settings(model="m", agent="tools"), Settings(model="m"), "--humanfix-agent"),
    ("agent", Settings(model="m"), Settings(model="m", agent="tools"), "--humanfix-agent"),
    ("tests", Settings(model="m", tests="plus"), Settings(model="m"), "--humanfix-tests"),
    ("tests", Settings(model="m"), Settings(model="m", tests="plus"), "--humanfix-tests"),
    ("chat_stop", Settings(model="m", chat_stop="none"), Settings(model="m"),
     "--humanfix-chat-stop"),
    ("chat_stop", Settings(model="m"), Settings(model="m", chat_stop="none"),
     "--humanfix-chat-stop"),
]


@pytest.mark.parametrize(("field", "made", "now", "option"), SETTINGS_APART)
def test_a_record_made_with_another_agent_tests_or_chat_stop_is_refused(tmp_path, field, made,
                                                                         now, option):
    protocol = RunProtocol.of(made, "python").to_json()
    path = write(tmp_path / "r.jsonl", record("Python/0", "fixed", protocol=protocol))
    wanted = {"python": run_fingerprint("m", RunProtocol.of(now, "python").to_json(), "hash")}
    with pytest.raises(ResumeError, match=f"record 1 \\(Python/0\\).*protocol: {field}: ") as e:
        load_finished(path, wanted, ["Python/0"])
    assert f"Resume with the same options ({option})" in str(e.value)
    # Made with the run's own settings, the same record resumes.
    same = record("Python/0", "fixed", protocol=RunProtocol.of(now, "python").to_json())
    assert load_finished(write(path, same), wanted, ["Python/0"]) == {"Python/0": same}
