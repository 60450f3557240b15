"""JUnit (reporting/junit.py): the summary's figures as suite properties, and the file a merge
rebuilds from records."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reporting_records import record

from pytest_humanfix.reporting.gates import GateCheck
from pytest_humanfix.reporting.junit import add_gate_failure, junit_properties, write_junit
from pytest_humanfix.reporting.summary import attach_gates, build, times_from_records
from pytest_humanfix.reporting.xmltext import xml_text


def summary_of(records):
    return build(records, times_from_records([]))


def test_the_properties_carry_the_summarys_figures():
    records = [record("Python/0"), record("Python/1", "unfixed", flags=["f"]),
               record("Python/2", "error", error="boom")]
    properties = dict(junit_properties(summary_of(records)))
    assert properties["humanfix_pass_at_1"] == "0.3333"
    assert (properties["humanfix_fixed"], properties["humanfix_scored"],
            properties["humanfix_errors"], properties["humanfix_flagged"]) == ("1", "3", "1", "1")
    assert properties["humanfix_language"] == "python"
    assert properties["humanfix_pass_at_1_python"] == "0.3333"
    assert not any(name.startswith(("humanfix_pass_at_1_round", "humanfix_repeat",
                                    "humanfix_pass_at_1_plus")) for name in properties)


def test_a_run_without_a_model_names_none_as_the_terminal_does():
    from pytest_humanfix.reporting.terminal import summary_lines

    summary = summary_of([record("Python/0")])
    assert dict(junit_properties(summary))["humanfix_model"] == \
        "none named (the agent brings its own)"
    assert "model: none named (the agent brings its own)" in summary_lines(summary)
    named = summary_of([record("Python/0", model="qwen-coder")])
    assert dict(junit_properties(named))["humanfix_model"] == "qwen-coder"


def test_summary_svg_names_a_run_without_a_model_as_the_terminal_does():
    from pytest_humanfix.reporting.chart import render

    records = [record("Python/0"), record("Python/1", "unfixed")]
    svg = render(summary_of(records), records)
    assert "humanfix summary: none named (the agent brings its own)" in svg
    assert "pass@1 per bug type: none named (the agent brings its own)" in svg
    assert "None" not in svg


def test_rounds_repairs_plus_and_the_repeat_check_add_their_properties():
    records = [record("Python/0", fixed_round=1, plus_outcome="fixed",
                      protocol={"iters": 1, "tests": "plus"},
                      attempts=[{"round": 0}, {"round": 1, "status": "repeat"}],
                      repeat_check={"engine": "e", "reply_differs": True,
                                    "outcome_flipped": False})]
    properties = dict(junit_properties(summary_of(records)))
    assert (properties["humanfix_pass_at_1_round_0"],
            properties["humanfix_pass_at_1_round_1"]) == ("0.0000", "1.0000")
    assert (properties["humanfix_repair_replies"], properties["humanfix_repair_repeated"],
            properties["humanfix_repair_rounds"],
            properties["humanfix_repair_wasted_rounds"]) == ("1", "1", "1", "1")
    assert properties["humanfix_pass_at_1_plus"] == "1.0000"
    assert properties["humanfix_repeat_replies_differ"] == "1"


def test_a_rebuilt_file_has_a_case_per_task_and_an_unfixed_task_fails_unless_gated(tmp_path):
    records = [record("Python/0", seconds=1.0), record("Python/1", "unfixed", failure="no"),
               record("Python/2", "error", item_timeout=True, error="item timeout fired")]
    summary = summary_of(records)
    suite = ET.parse(write_junit(summary, records, tmp_path / "j.xml", gated=False)).find(
        "testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("3", "1", "1", "0")
    cases = suite.findall("testcase")
    assert cases[1].find("failure") is not None
    assert cases[2].find("error").get("message") == "item timeout"
    gated = ET.parse(write_junit(summary, records, tmp_path / "g.xml", gated=True)).find(
        "testsuite")
    assert (gated.get("failures"), gated.get("skipped")) == ("0", "1")
    assert gated.findall("testcase")[1].find("skipped").get("type") == "pytest.xfail"


def test_text_xml_cannot_hold_shows_as_pytest_shows_it():
    assert xml_text("a\x00b\x1bc\x7f\ud800\ufffe\t\n\r\U0001f600") == \
        "a#x00b#x1Bc#x7F#xD800#xFFFE\t\n\r\U0001f600"
    assert xml_text(3) == "3"


def test_a_rebuilt_file_parses_whatever_the_records_hold(tmp_path):
    records = [record("Python/0", "error", error="boom\x00\x08"),
               record("Python/1", "unfixed", failure="\x1b[31mred", known_failure="flaky\x01")]
    suite = ET.parse(write_junit(summary_of(records), records, tmp_path / "j.xml",
                                 gated=False)).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert cases[0].find("error").text == "boom#x00#x08"
    assert cases[1].find("skipped").get("message") == \
        "known failure here (unfixed): flaky#x01"
    assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")


def gate_failed_summary(records):
    summary = summary_of(records)
    attach_gates(summary, [GateCheck("fail-under", False, "pass@1 0.0000 is under 0.35"),
                           GateCheck("complete", True, "held")])
    return summary


def test_a_failed_gate_is_a_failed_case_and_agent_errors_count_as_not_fixed(tmp_path):
    records = [record("Python/0", "unfixed", failure="raised",
                      agent_error={"type": "ValueError", "message": "boom"}),
               record("Python/1", "unfixed", failure="no")]
    summary = gate_failed_summary(records)
    assert summary["tasks"]["agent_errors"] == 1 and summary["tasks"]["unfixed"] == 1
    assert dict(junit_properties(summary))["humanfix_agent_errors"] == "1"
    suite = ET.parse(write_junit(summary, records, tmp_path / "j.xml", gated=True)).find(
        "testsuite")
    # Under a gate the two not fixed are expected failures; the failed gate is the failure.
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "2")
    gate = suite.findall("testcase")[-1]
    assert (gate.get("classname"), gate.get("name")) == ("humanfix", "gates")
    assert gate.find("failure").get("message") == \
        "humanfix gate FAILED: pass@1 0.0000 is under 0.35"
    held = summary_of(records)
    attach_gates(held, [GateCheck("fail-under", True, "held")])
    suite = ET.parse(write_junit(held, records, tmp_path / "h.xml", gated=True)).find(
        "testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "0")


def test_a_failed_gate_is_a_failed_case_in_pytests_own_file(tmp_path):
    from _pytest.junitxml import LogXML

    path = tmp_path / "junit.xml"
    xml = LogXML(str(path), None)
    xml.pytest_sessionstart()
    add_gate_failure(xml, gate_failed_summary([record("Python/0", "unfixed")]))
    xml.pytest_sessionfinish()
    suite = ET.parse(path).find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    [case] = suite.findall("testcase")
    assert (case.get("classname"), case.get("name")) == ("humanfix", "gates")
    assert case.find("failure").get("message") == \
        "humanfix gate FAILED: pass@1 0.0000 is under 0.35"


def test_no_case_is_added_to_pytests_file_when_the_gates_held(tmp_path):
    from _pytest.junitxml import LogXML

    path = tmp_path / "junit.xml"
    xml = LogXML(str(path), None)
    xml.pytest_sessionstart()
    summary = summary_of([record("Python/0")])
    attach_gates(summary, [GateCheck("fail-under", True, "held")])
    add_gate_failure(xml, summary)
    xml.pytest_sessionfinish()
    assert ET.parse(path).find("testsuite").get("tests") == "0"


def test_the_cost_is_a_suite_property_and_each_tasks_a_test_case_property(tmp_path):
    records = [record("Python/0", tokens={"prompt": 90, "completion": 10}, replies=1,
                      sandbox_runs=1, seconds=2.0),
               record("Python/1", "unfixed", tokens={"prompt": 250, "completion": 50},
                      replies=3, sandbox_runs=4, seconds=6.0)]
    summary = summary_of(records)
    properties = dict(junit_properties(summary))
    assert properties["humanfix_cost_tokens"] == "400"
    assert properties["humanfix_cost_per_task_replies"] == "2.0000"
    assert properties["humanfix_cost_per_fix_sandbox_runs"] == "5.0000"
    path = write_junit(summary, records, tmp_path / "junit.xml", gated=False)
    cases = ET.parse(path).getroot().iter("testcase")
    by_case = [{p.get("name"): p.get("value") for p in case.iter("property")} for case in cases]
    assert by_case[1] == {"prompt_tokens": "250", "completion_tokens": "50", "tokens": "300",
                          "replies": "3", "sandbox_runs": "4", "seconds": "6.0000"}
