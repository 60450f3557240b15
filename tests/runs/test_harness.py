"""The harness end to end: control models on the real dataset through pytest (and xdist)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest


def junit_suite(pytester: pytest.Pytester) -> ET.Element:
    return ET.parse(pytester.path / "reports" / "junit.xml").getroot().find("testsuite")


def suite_properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in suite.find("properties")}


def case_properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.find("properties")}


@pytest.fixture
def bystander_tests(humanfix_pytester: pytest.Pytester) -> pytest.Pytester:
    """Ordinary tests beside the run that must not be collected while humanfix is active."""
    humanfix_pytester.makepyfile(test_bystander="def test_bystander():\n    assert False\n")
    humanfix_pytester.mkdir("tests").joinpath("test_more.py").write_text(
        "def test_more():\n    assert False\n")
    return humanfix_pytester


def test_canonical_control_scores_every_task_under_xdist(bystander_tests, dataset_rows,
                                                         read_records):
    result = bystander_tests.runpytest("--humanfix-model", "canonical", "-n", "2")
    total = len(dataset_rows)
    result.assert_outcomes(passed=total)
    result.stdout.fnmatch_lines([f"pass@1 = 100.0% ({total}/{total})*"])
    result.stdout.no_fnmatch_line("*bystander*")

    records = read_records()
    assert len(records) == total
    assert {r["task_id"] for r in records} == {row["task_id"] for row in dataset_rows}
    assert Counter(r["outcome"] for r in records) == {"fixed": total}
    assert {r["model"] for r in records} == {"canonical"}
    assert len({r["run_id"] for r in records}) == 1
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    sample = records[0]
    assert sample["verdict"]["status"] == "passed" and sample["verdict"]["exit_code"] == 0
    assert sample["protocol"]["timeout"] == 10.0 and sample["code"]

    suite = junit_suite(bystander_tests)
    cases = suite.findall("testcase")
    assert len(cases) == total
    assert suite_properties(suite)["humanfix_pass_at_1"] == "1.0000"
    by_id = {case_properties(c)["task_id"]: case_properties(c) for c in cases}
    first = by_id["Python/0"]
    assert {k: first[k] for k in ("task_id", "bug_type", "outcome")} == {
        "task_id": "Python/0", "bug_type": dataset_rows[0]["bug_type"], "outcome": "fixed"}
    # The task's cost beside them: a control asks no model, and runs the tests once.
    assert {k: first[k] for k in ("tokens", "replies", "sandbox_runs")} == {
        "tokens": "0", "replies": "1", "sandbox_runs": "1"}


def test_buggy_control_fixes_nothing_under_xdist(humanfix_pytester, dataset_rows, read_records):
    # A floor of 3 s, not the default 10: each looping solution holds a worker for its limit
    # twice (the re-run), and a loop is caught at any limit. The other buggy solutions end in
    # under 0.1 s even at four workers per core, so none of them reaches 3 s.
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "-n", "2",
                                         "--humanfix-timeout", "3")
    rows = dataset_rows
    result.assert_outcomes(failed=len(rows))
    result.stdout.fnmatch_lines([f"pass@1 = 0.0% (0/{len(rows)})*"])

    records = read_records()
    assert Counter(r["outcome"] for r in records) == {"unfixed": len(rows)}
    # The three buggy solutions that loop forever are stopped by the wall-clock limit.
    assert Counter(r["verdict"]["status"] for r in records)["timeout"] == 3
    # The summary's per-bug-type table agrees with the dataset's own counts.
    for bug_type, count in Counter(row["bug_type"] for row in rows).items():
        result.stdout.fnmatch_lines([f"{bug_type} *0 *{count} *0 *0.0%"])
    assert suite_properties(junit_suite(humanfix_pytester))["humanfix_pass_at_1"] == "0.0000"


@pytest.mark.slow
@pytest.mark.parametrize(("model", "fixed", "floor"), [
    ("canonical", True, ()),
    # A floor of 1 s: the three looping solutions would hold a worker 10 s twice each, and a
    # shorter limit cannot make a task fixed.
    ("buggy", False, ("--humanfix-timeout", "1"))], ids=["canonical-True", "buggy-False"])
def test_primed_controls_fix_every_task_or_none(model, fixed, floor, humanfix_pytester,
                                                dataset_rows, read_records):
    """Primed, a control continues the prompt base with its solution's body, as a completion
    would: every continuation, cut at the stop words and put after the prompt base, is the
    solution again."""
    result = humanfix_pytester.runpytest("--humanfix-model", model, "--humanfix-prompt",
                                         "primed", "-n", "2", *floor)
    total = len(dataset_rows)
    result.stdout.fnmatch_lines([f"pass@1 = {100.0 if fixed else 0.0}% "
                                 f"({total if fixed else 0}/{total})*"])
    records = read_records()
    assert Counter(r["outcome"] for r in records) == {"fixed" if fixed else "unfixed": total}
    assert {a["prompt"] for r in records for a in r["attempts"]} == {"primed"}
    assert {r["protocol"]["prompt"] for r in records} == {"primed"}


def test_not_fixed_report_is_short_and_says_why(humanfix_pytester, dataset_rows):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-task", "Python/0")
    result.assert_outcomes(failed=1)
    bug_type = dataset_rows[0]["bug_type"]
    result.stdout.fnmatch_lines([
        f"Python/0 has_close_elements [[]{bug_type}[]]: not fixed",
        "first failure:",
        "    assert has_close_elements(*",
        "    assert True == False",
        "     +  where True = has_close_elements(*",
        "diff of the candidate against the buggy code:",
        "(the candidate is the buggy code, unchanged)",
    ])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_k_selects_one_task_by_entry_point(humanfix_pytester, read_records):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "-k", "has_close_elements")
    result.assert_outcomes(passed=1)
    assert [r["task_id"] for r in read_records()] == ["Python/0"]


def test_k_selects_a_bug_type(humanfix_pytester, dataset_rows, read_records):
    expected = {r["task_id"] for r in dataset_rows if r["bug_type"] == "operator misuse"}
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "-k", "operator_misuse",
                                         "-n", "2")
    result.assert_outcomes(passed=len(expected))
    assert {r["task_id"] for r in read_records()} == expected


def test_items_carry_the_humanfix_marker_and_readable_names(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "3",
                                         "-m", "humanfix", "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "humanevalfix::Python_0_has_close_elements",
        "humanevalfix::Python_1_separate_paren_groups",
        "humanevalfix::Python_2_truncate_number",
    ])
    result.stdout.fnmatch_lines(["3 tests collected*"])


def test_max_takes_the_first_tasks_in_dataset_order(humanfix_pytester, dataset_rows, read_records):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-max", "4")
    result.assert_outcomes(passed=4)
    first = [row["task_id"] for row in dataset_rows[:4]]
    assert [r["task_id"] for r in read_records()] == first


def test_task_selects_exact_ids(humanfix_pytester, read_records):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy",
                                         "--humanfix-task", "Python/12,Python/3")
    result.assert_outcomes(failed=2)
    assert sorted(r["task_id"] for r in read_records()) == ["Python/12", "Python/3"]


def test_ini_keys_work_like_the_command_line(pytester, dataset, tmp_path):
    pytester.makeini(f"""
        [pytest]
        addopts = -p no:randomly
        humanfix_model = canonical
        humanfix_dataset = {dataset}
        humanfix_max = 2
        humanfix_report_dir = out
        humanfix_jsonl = {tmp_path / "results.jsonl"}
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 2
    assert (pytester.path / "out" / "junit.xml").is_file()


def test_plugin_is_inert_without_a_model(humanfix_pytester):
    humanfix_pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = humanfix_pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*humanfix summary*")
    assert not (humanfix_pytester.path / "reports").exists()


def test_harness_error_is_retried_then_counted_apart_and_scored_not_fixed(
        humanfix_pytester, tmp_path, records_by_task):
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"task_id": "Python/2", "completion":
                                   "def truncate_number(number):\n    return number % 1.0\n"}) + "\n")
    result = humanfix_pytester.runpytest("--humanfix-model", f"replay:{replies}",
                                         "--humanfix-task", "Python/2,Python/3")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "pass@1 = 50.0% (1/2)*",
        "fixed 1, not fixed 0, errors 1 (harness faults, scored not fixed)",
        "WARNING: 1 task(s) ended in a harness error, scored not fixed: Python/3 (retried)",
    ])
    records = records_by_task()
    assert records["Python/3"]["outcome"] == "error"
    assert "no reply for Python/3" in records["Python/3"]["error"]
    assert "no reply for Python/3" in records["Python/3"]["first_try"]["error"]


def test_early_exit_with_status_zero_is_not_a_fix(humanfix_pytester, tmp_path, read_records):
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"task_id": "Python/2", "completion": (
        "```python\nimport sys\ndef truncate_number(number):\n    sys.exit(0)\n```")}) + "\n")
    result = humanfix_pytester.runpytest("--humanfix-model", f"replay:{replies}",
                                         "--humanfix-task", "Python/2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the program exited before its tests finished*"])
    assert read_records()[0]["verdict"]["status"] == "exited_early"


@pytest.mark.parametrize("args, message", [
    (["--humanfix-model", "gpt-17-ultra"], "*unknown model 'gpt-17-ultra'. Known models: canonical, buggy*"),
    (["--humanfix-model", "canonical", "--humanfix-dataset", "missing.jsonl"],
     "*dataset file */missing.jsonl does not exist*"),
    (["--humanfix-model", "canonical", "--humanfix-task", "Python/999"],
     "*unknown task id(s) Python/999*"),
    (["--humanfix-model", "canonical", "--humanfix-max", "zero"],
     "*--humanfix-max / humanfix_max: 'zero' must be a whole number of 1 or more*"),
])
def test_bad_input_is_a_short_usage_error(humanfix_pytester, args, message):
    result = humanfix_pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_dataset_row_missing_a_field_names_file_row_and_field(humanfix_pytester, dataset_rows):
    rows = dataset_rows[:3]
    del rows[1]["test"]
    broken = humanfix_pytester.path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical",
                                         "--humanfix-dataset", str(broken))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{broken}: row 2 (task_id 'Python/1'): field 'test' is missing*"])
    assert "Traceback" not in result.stderr.str()


def test_unwritable_report_dir_is_refused_before_any_work(humanfix_pytester):
    (humanfix_pytester.path / "afile").write_text("not a folder")
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical",
                                         "--humanfix-report-dir", "afile/reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot write results to *afile/reports/humanfix.jsonl*"])
