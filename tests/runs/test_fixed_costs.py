"""What a run pays before and after its tasks: the control models walk the agent's graph without
LangGraph, and the chart is SVG written in the run's own process without matplotlib; so no pytest
process of a control run imports either (each is most of a second)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

HEAVY = ("langgraph", "matplotlib", "torch", "transformers", "datasets")

# Each pytest process of the run writes down which heavy modules it imported.
MODULES_PROBE = f"""
import json, sys

def pytest_unconfigure(config):
    # Not PYTEST_XDIST_WORKER: an outer xdist run passes its own down to this one.
    role = getattr(config, "workerinput", {{}}).get("workerid", "controller")
    loaded = [m for m in {HEAVY!r} if m in sys.modules]
    (config.rootpath / f"modules-{{role}}.json").write_text(json.dumps(loaded))
"""


def test_a_control_run_imports_neither_langgraph_nor_matplotlib(humanfix_pytester):
    humanfix_pytester.makeconftest(MODULES_PROBE)
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=4", "-n", "2",
                                                    "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    loaded = {path.stem.removeprefix("modules-"): json.loads(path.read_text())
              for path in humanfix_pytester.path.glob("modules-*.json")}
    assert loaded == {"controller": [], "gw0": [], "gw1": []}
    # The chart is drawn all the same, whole.
    result.stdout.fnmatch_lines(["wrote reports/summary.svg"])
    svg = humanfix_pytester.path / "reports" / "summary.svg"
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert not list(svg.parent.glob("*.partial.svg"))


def test_a_chart_that_cannot_be_written_is_a_warning_and_not_listed(humanfix_pytester):
    (humanfix_pytester.path / "reports" / "summary.svg").mkdir(parents=True)
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["WARNING: humanfix could not draw *reports/summary.svg: "
                                 "IsADirectoryError*"])
    result.stdout.no_fnmatch_line("wrote *summary.svg")
    result.stdout.fnmatch_lines(["wrote *reports/summary.md"])
    assert not list((humanfix_pytester.path / "reports").glob("*.partial.svg"))
