"""`humanfix-report merge` (reporting/merge.py) on literal shard files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from reporting_records import record

from pytest_humanfix.dataset import item_name
from pytest_humanfix.protocol import RunProtocol
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.merge import MergeError, merge
from pytest_humanfix.settings import Settings


def shard_record(task_id, index, tasks, count=2, **fields):
    shard = {"index": index, "count": count, "selection": "s", "selected": 3, "tasks": tasks}
    return record(task_id, shard=shard, model="m", dataset_hash="h", run_id=f"r{index}",
                  **fields)


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def shards(tmp_path):
    first = write(tmp_path / "1.jsonl", shard_record("Python/2", 1, ["Python/0", "Python/2"]),
                  shard_record("Python/0", 1, ["Python/0", "Python/2"]))
    second = write(tmp_path / "2.jsonl", shard_record("Python/1", 2, ["Python/1"]))
    return first, second


def test_the_shards_make_one_run_in_task_order(shards):
    records, files = merge(list(shards))
    assert [r["task_id"] for r in records] == ["Python/0", "Python/1", "Python/2"]
    assert files[0].label() == {"file": str(shards[0]), "index": 1, "count": 2, "tasks": 2,
                                "run_ids": ["r1"]}


def test_a_missing_shard_is_named_with_the_line_that_runs_it(shards):
    with pytest.raises(MergeError, match=r"shard 2/2 is missing.*--humanfix-shard 2/2"):
        merge([shards[0]])


def test_a_shard_given_twice_is_refused(shards):
    with pytest.raises(MergeError, match="is given twice"):
        merge([shards[0], shards[0], shards[1]])


def test_a_shard_that_did_not_finish_names_its_first_missing_task(tmp_path, shards):
    short = write(tmp_path / "short.jsonl", shard_record("Python/0", 1, ["Python/0", "Python/2"]))
    with pytest.raises(MergeError, match=r"task Python/2 has no record.*--humanfix-resume"):
        merge([short, shards[1]])


def test_shards_of_another_count_or_model_are_not_of_one_run(tmp_path, shards):
    other = write(tmp_path / "o.jsonl", shard_record("Python/1", 2, ["Python/1"], count=3))
    with pytest.raises(MergeError, match="another shard count"):
        merge([shards[0], other])
    model = write(tmp_path / "m.jsonl", {**shard_record("Python/1", 2, ["Python/1"]),
                                          "model": "other"})
    with pytest.raises(MergeError, match="made under another model"):
        merge([shards[0], model])


def test_records_without_a_shard_are_refused(tmp_path):
    with pytest.raises(MergeError, match="has no shard"):
        merge([write(tmp_path / "x.jsonl", record("Python/0"))])


def made_with(settings):
    return RunProtocol.of(settings, "python").to_json()


@pytest.mark.parametrize(("field", "one", "other", "option"), [
    ("agent", Settings(agent="tools"), Settings(), "--humanfix-agent"),
    ("tests", Settings(), Settings(tests="plus"), "--humanfix-tests"),
    ("chat_stop", Settings(chat_stop="none"), Settings(), "--humanfix-chat-stop"),
])
@pytest.mark.parametrize("order", ["first", "second"])
def test_shards_made_with_another_agent_tests_or_chat_stop_are_refused(tmp_path, field, one,
                                                                       other, option, order):
    # Either way round: the field written by the first shard, or only by the second.
    made = (one, other) if order == "first" else (other, one)
    first = write(tmp_path / "1.jsonl", *(
        shard_record(task, 1, ["Python/0", "Python/2"], protocol=made_with(made[0]))
        for task in ("Python/0", "Python/2")))
    second = write(tmp_path / "2.jsonl",
                   shard_record("Python/1", 2, ["Python/1"], protocol=made_with(made[1])))
    with pytest.raises(MergeError, match=f"shard 2/2.*\\({field}: .* there, .* here\\)") as e:
        merge([first, second])
    assert str(e.value).endswith(f"made with the same {option}.")
    alike = write(tmp_path / "3.jsonl",
                  shard_record("Python/1", 2, ["Python/1"], protocol=made_with(made[0])))
    assert [r["task_id"] for r in merge([first, alike])[0]] == ["Python/0", "Python/1",
                                                                 "Python/2"]


def test_records_of_one_shard_made_otherwise_are_refused(tmp_path, shards):
    mixed = write(tmp_path / "mixed.jsonl",
                  shard_record("Python/0", 1, ["Python/0", "Python/2"],
                               protocol=made_with(Settings())),
                  shard_record("Python/2", 1, ["Python/0", "Python/2"],
                               protocol=made_with(Settings(agent="tools"))))
    with pytest.raises(MergeError, match="task Python/2: made under .*agent: 'tools' there"):
        merge([mixed, shards[1]])


# Every C0 control character, as a model may write them into its reply and so into the record.
CONTROLS = "".join(map(chr, range(0x20)))


def test_a_merged_junit_is_xml_whatever_the_model_wrote_and_a_known_failure_is_a_runs(
        tmp_path, pytester, capsys):
    tasks = (["Go/95", "Go/2"], ["Go/1"])
    first = write(tmp_path / "1.jsonl",
                  shard_record("Go/95", 1, tasks[0], language="go", known_failure="flaky",
                               outcome="unfixed", failure=f"no{CONTROLS}"),
                  shard_record("Go/2", 1, tasks[0], language="go", outcome="error",
                               error=f"boom{CONTROLS}"))
    second = write(tmp_path / "2.jsonl",
                   shard_record("Go/1", 2, tasks[1], language="go", outcome="unfixed",
                                failure=f"said {CONTROLS} end", diff=f"-{CONTROLS}+"))
    assert report_main(["merge", str(first), str(second), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    suite = ET.parse(tmp_path / "out" / "junit.xml").find("testsuite")  # parses
    assert suite is not None
    # The known failure is an expected failure, not a failure: only Go/1 fails.
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("3", "1", "1", "1")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    failed = cases[item_name("Go/1", "f")].find("failure")
    assert failed is not None
    # Tab and newline stand as they are (a carriage return reads back as a newline, as XML
    # has it); every other control character shows as #xNN.
    shown = "".join(f"#x{n:02X}" if chr(n) not in "\t\n\r" else chr(n) for n in range(0x20))
    assert failed.text == f"said {shown} end\n-{shown}+".replace("\r", "\n")
    known = cases[item_name("Go/95", "f")]
    assert known.find("failure") is None
    # A run writes the item of a known failure as pytest's junit writes its xfail.
    listed = json.loads(first.read_text().splitlines()[0])
    reason = (listed["outcome"], listed["known_failure"])
    pytester.makepyfile(test_known=(
        "import pytest\n"
        "from pytest_humanfix.reporting.junit import known_failure_reason\n"
        "def test_go_95():\n"
        f"    pytest.xfail(known_failure_reason(*{reason!r}))\n"))
    pytester.runpytest_inprocess(f"--junitxml={tmp_path / 'run.xml'}").assert_outcomes(xfailed=1)
    run_case = ET.parse(tmp_path / "run.xml").find("testsuite/testcase")
    assert run_case is not None
    ran, merged = run_case.find("skipped"), known.find("skipped")
    assert ran is not None and merged is not None
    assert (merged.tag, merged.attrib, merged.text) == (ran.tag, ran.attrib, ran.text)
    assert merged.get("message") == "known failure here (unfixed): flaky"
