"""The plugin beside the pytest plugins people already run (the `test` extra installs them):
pytest-randomly, pytest-rerunfailures, pytest-html, pytest-json-report and pytest-split, with and
without xdist; and pytest's own partial runs (-x, -k, --lf, --sw). Each task is counted once,
by its last run, and a figure over a subset says so."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_humanfix.dataset import load_tasks

TASKS = 6
# Where the browser test keeps its screenshot (ignored by git; CI keeps it as an artifact).
REPORTS = Path(__file__).resolve().parents[2] / "reports"
# Turned on by name: the suite's ini turns pytest-randomly off (see pyproject.toml).
PLUGINS = ("-p", "randomly", "-p", "rerunfailures", "--reruns=1", "--html=report.html",
           "--self-contained-html", "--json-report", "--json-report-file=report.json")

# A server hiccup: the first evaluation of each task in this folder is a harness error.
HICCUP_CONFTEST = """
import os
from pytest_humanfix.records import TaskResult
from pytest_humanfix.session import runner

_evaluate = runner.Runner.evaluate


def evaluate(self, task, agent=None):
    marker = os.path.join({folder!r}, "hiccup-" + task.item_name)
    if not os.path.exists(marker):
        open(marker, "w").close()
        return TaskResult.error_for(task, "server hiccup: connection reset")
    return _evaluate(self, task, agent)


runner.Runner.evaluate = evaluate
"""

FLAKY_MARKER = """

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.flaky(reruns=2, only_rerun=["harness error"]))
"""


@pytest.fixture
def eco(humanfix_pytester: pytest.Pytester) -> pytest.Pytester:
    """A humanfix folder whose ini leaves pytest-randomly on, as a user's would."""
    humanfix_pytester.makeini("[pytest]\n")
    return humanfix_pytester


def fenced(code: str) -> str:
    return f"Here is the fixed function:\n\n```python\n{code}```\n"


@pytest.fixture
def mixed_replay(eco: pytest.Pytester, dataset: Path) -> Path:
    """A recorded model that fixes the even tasks of the first TASKS and repeats the buggy code
    of the odd ones."""
    rows = [{"task_id": t.task_id,
             "completion": fenced(t.canonical_code if n % 2 == 0 else t.buggy_code)}
            for n, t in enumerate(load_tasks(str(dataset))[:TASKS])]
    path = eco.path / "replies.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def model_spec(model: str, replay: Path) -> str:
    return f"replay:{replay}" if model == "mixed" else model


def read_summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "reports" / "summary.json").read_text(encoding="utf-8"))


def records(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "reports" / "humanfix.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def junit(folder: Path) -> tuple[ET.Element, dict[str, str]]:
    """The JUnit file's suite (a parse error fails the test) and its properties."""
    suite = ET.parse(folder / "reports" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    return suite, {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}


def one_per_task(found: list[dict[str, Any]], expected: set[str]) -> dict[str, dict[str, Any]]:
    by_task = {r["task_id"]: r for r in found}
    assert len(by_task) == len(found), "a task has more than one record"
    assert set(by_task) == expected
    return by_task


def assert_no_warnings(result: pytest.RunResult) -> None:
    outcomes = result.parseoutcomes()
    assert "warnings" not in outcomes and "warning" not in outcomes, result.outlines[-40:]


@pytest.mark.parametrize(("model", "workers"), [("canonical", 0), ("buggy", 2), ("mixed", 0),
                                                ("mixed", 2)])
def test_the_plugins_count_each_task_once_with_a_plain_runs_pass_at_1(eco, mixed_replay, model,
                                                                      workers):
    spec = f"--humanfix-model={model_spec(model, mixed_replay)}"
    xdist = ["-n", str(workers)] if workers else []
    plain = eco.runpytest(spec, f"--humanfix-max={TASKS}", "-p", "no:randomly", *xdist)
    assert plain.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    expected = read_summary(eco.path)
    selected = {r["task_id"] for r in records(eco.path)}
    assert len(selected) == TASKS

    result = eco.runpytest(spec, f"--humanfix-max={TASKS}", *PLUGINS, *xdist)
    assert result.ret == plain.ret
    assert_no_warnings(result)
    found = one_per_task(records(eco.path), selected)
    summary = read_summary(eco.path)
    assert summary["pass_at_1"] == expected["pass_at_1"]
    assert summary["tasks"] == expected["tasks"]
    assert summary["coverage"]["selected"] == summary["coverage"]["run"] == TASKS
    unfixed = {t for t, r in found.items() if r["outcome"] == "unfixed"}
    # An unfixed task fails its item, so pytest-rerunfailures ran it twice: the last run
    # decides, the first stays in the record.
    assert {t for t, r in found.items() if r.get("reruns")} == unfixed
    assert all([run["outcome"] for run in found[t]["reruns"]] == ["unfixed"] for t in unfixed)
    if unfixed:
        assert f"{len(unfixed)} task(s) were run again (reruns)" in result.stdout.str()

    suite, properties = junit(eco.path)
    assert properties["humanfix_pass_at_1"] == f"{expected['pass_at_1']['value']:.4f}"
    assert properties["humanfix_selected"] == properties["humanfix_run"] == str(TASKS)
    assert properties["humanfix_not_run"] == "0"
    assert suite.get("tests") == str(TASKS)
    # pytest's JUnit writer adds an empty testcase for each run that pytest-rerunfailures
    # replaced; the last testcase of a task is its verdict.
    last = {case.get("name"): case for case in suite.iter("testcase")}
    assert len(last) == TASKS
    failed = {"/".join(str(name).split("_")[:2]) for name, case in last.items()
              if case.find("failure") is not None}
    assert failed == unfixed

    report = json.loads((eco.path / "report.json").read_text(encoding="utf-8"))
    assert len({t["nodeid"] for t in report["tests"]}) == TASKS
    html = (eco.path / "report.html").read_text(encoding="utf-8")
    assert all(f"Python_{n}_" in html for n in range(TASKS))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_harness_error_retried_by_reruns_counts_once_by_its_last_run(eco, mixed_replay,
                                                                       workers):
    """Only the harness error is retried (--only-rerun): the greedy model's unfixed tasks would
    only repeat themselves."""
    eco.makeconftest(HICCUP_CONFTEST.format(folder=str(eco.path)))
    result = eco.runpytest_subprocess(
        f"--humanfix-model=replay:{mixed_replay}", f"--humanfix-max={TASKS}", "-p", "randomly",
        "-p", "rerunfailures", "--reruns=2", "--only-rerun=harness error",
        *(["-n", str(workers)] if workers else []))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = one_per_task(records(eco.path), {f"Python/{n}" for n in range(TASKS)})
    for task_id, record in found.items():
        assert record["outcome"] == ("fixed" if int(task_id.split("/")[1]) % 2 == 0
                                     else "unfixed")
        assert [(r["outcome"], r["error"]) for r in record["reruns"]] == [
            ("error", "server hiccup: connection reset")]
    summary = read_summary(eco.path)
    assert summary["tasks"] == {"total": TASKS, "scored": TASKS, "errors": 0,
                                "item_timeouts": 0, "retried": 0, "fixed": TASKS // 2,
                                "unfixed": TASKS - TASKS // 2, "flagged": 0,
                                "known_failures": 0, "agent_errors": 0}
    assert summary["pass_at_1"]["value"] == 0.5
    result.stdout.fnmatch_lines([f"pass@1 = 50.0% (3/{TASKS}) = 0.5000*"])


def test_the_flaky_marker_reruns_a_harness_error_under_xdist(eco):
    eco.makeconftest(HICCUP_CONFTEST.format(folder=str(eco.path)) + FLAKY_MARKER)
    result = eco.runpytest_subprocess("--humanfix-model=canonical", "--humanfix-max=3",
                                      "-p", "rerunfailures", "-n", "2")
    assert result.ret == pytest.ExitCode.OK
    found = one_per_task(records(eco.path), {"Python/0", "Python/1", "Python/2"})
    assert {r["outcome"] for r in found.values()} == {"fixed"}
    assert all(len(r["reruns"]) == 1 for r in found.values())
    assert read_summary(eco.path)["pass_at_1"]["value"] == 1.0


def test_an_exitfirst_stop_is_said_in_the_summary_json_and_junit(eco):
    result = eco.runpytest("--humanfix-model=buggy", "--humanfix-max=4", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    coverage = read_summary(eco.path)["coverage"]
    assert (coverage["selected"], coverage["run"], coverage["not_run"]) == (4, 1, 3)
    assert coverage["why"] == ["3 stopped early: stopping after 1 failures"]
    _, properties = junit(eco.path)
    assert properties["humanfix_not_run"] == "3"
    assert properties["humanfix_not_run_why"] == coverage["why"][0]
    result.stdout.fnmatch_lines(["WARNING: pass@1 is over a subset: 1 of 4 selected task(s) "
                                 "ran; not run: 3 stopped early*"])


def test_a_gate_fails_a_partial_run_and_holds_once_resume_completes_it(eco):
    base = ("--humanfix-model=canonical", "--humanfix-max=4", "--humanfix-fail-under=0.5")
    partial = eco.runpytest(*base, "-k", "Python_0_ or Python_1_")
    assert partial.ret == pytest.ExitCode.TESTS_FAILED
    partial.assert_outcomes(passed=2, deselected=2)
    assert partial.outlines[-2] == (
        "humanfix gate FAILED: 2 of 4 selected task(s) did not run (2 deselected by -k): gates "
        "judge complete runs only; finish it with --humanfix-resume")
    _, properties = junit(eco.path)
    assert properties["humanfix_gate"].startswith("humanfix gate FAILED: 2 of 4 selected")

    resumed = eco.runpytest(*base, "--humanfix-resume")
    assert resumed.ret == pytest.ExitCode.OK
    assert read_summary(eco.path)["coverage"]["not_run"] == 0
    assert "humanfix gates held: pass@1 1.0000 over 4" in resumed.stdout.str()
    one_per_task(records(eco.path), {f"Python/{n}" for n in range(4)})


def test_last_failed_runs_the_unfixed_tasks_again_under_a_gate(eco, mixed_replay):
    base = (f"--humanfix-model=replay:{mixed_replay}", f"--humanfix-max={TASKS}",
            "--humanfix-fail-under=0")
    first = eco.runpytest(*base)
    first.assert_outcomes(passed=TASKS // 2, xfailed=TASKS - TASKS // 2)
    again = eco.runpytest(*base, "--lf")
    # Unfixed tasks are expected failures under a gate, yet the cache keeps them as failed.
    again.assert_outcomes(xfailed=TASKS - TASKS // 2, deselected=TASKS // 2)
    coverage = read_summary(eco.path)["coverage"]
    assert coverage["why"] == [f"{TASKS // 2} deselected by --lf"]
    assert sorted(coverage["not_run_tasks"]["deselected by --lf"]) == [
        f"Python/{n}" for n in range(0, TASKS, 2)]
    again.stdout.fnmatch_lines(["WARNING: pass@1 is over a subset: 3 of 6 selected task(s) ran*",
                                "*humanfix gate FAILED: 3 of 6 selected task(s) did not run*"])


def test_stepwise_stops_at_an_unfixed_task_and_starts_there_next_time(eco, mixed_replay):
    base = (f"--humanfix-model=replay:{mixed_replay}", f"--humanfix-max={TASKS}", "--sw",
            "-p", "no:randomly")
    # In a subprocess: stepwise's in-process second run does not stop (pytester keeps state).
    first = eco.runpytest_subprocess(*base)
    first.assert_outcomes(passed=1, failed=1)
    assert read_summary(eco.path)["coverage"]["why"] == [
        f"{TASKS - 2} stopped early: Test failed, continuing from this test "
        "next run."]
    second = eco.runpytest_subprocess(*base)
    second.assert_outcomes(failed=1, deselected=1)
    assert read_summary(eco.path)["coverage"]["not_run_tasks"] == {
        "deselected by --sw": ["Python/0"],
        "stopped early: Test failed, continuing from this test next run.":
            [f"Python/{n}" for n in range(2, TASKS)]}


def test_pytest_split_groups_together_cover_the_selection_once(eco):
    seen: list[str] = []
    for group in (1, 2):
        # Shards agree on the order only under one seed, or none (pytest-randomly off).
        result = eco.runpytest("--humanfix-model=canonical", "--humanfix-max=4", "--splits=2",
                               f"--group={group}", "-p", "no:randomly")
        assert result.ret == pytest.ExitCode.OK
        assert_no_warnings(result)
        coverage = read_summary(eco.path)["coverage"]
        assert coverage["why"] == ["2 deselected by --splits/--group"]
        # Each group's run moves the one before it aside, as separate CI jobs never share one.
        seen += [r["task_id"] for r in records(eco.path)]
    assert sorted(seen) == [f"Python/{n}" for n in range(4)]



def html_data(path: Path) -> dict[str, Any]:
    """The data pytest-html renders its page from (a JSON blob in the page)."""
    blob = re.search(r'data-jsonblob="([^"]*)"', path.read_text(encoding="utf-8"))
    assert blob is not None, "no data blob in the pytest-html report"
    return json.loads(html.unescape(blob.group(1)))


@pytest.fixture
def html_report(eco: pytest.Pytester, mixed_replay: Path) -> Path:
    result = eco.runpytest(f"--humanfix-model=replay:{mixed_replay}", "--humanfix-max=2",
                           "--html=report.html", "--self-contained-html", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_no_warnings(result)
    return eco.path / "report.html"


def test_the_html_report_carries_each_tasks_trajectory_and_the_summary(html_report, dataset):
    tasks = {t.task_id: t for t in load_tasks(str(dataset))[:2]}
    data = html_data(html_report)
    extras = {test_id: "".join(e["content"] for run in runs for e in run["extras"]
                               if e["format_type"] == "html")
              for test_id, runs in data["tests"].items()}
    fixed = next(c for t, c in extras.items() if "Python_0_" in t)
    unfixed = next(c for t, c in extras.items() if "Python_1_" in t)
    found = one_per_task(records(html_report.parent), set(tasks))
    # The fixed task shows its trajectory too: the reply, the extracted code and its diff.
    for task_id, shown, status in (("Python/0", fixed, "passed"), ("Python/1", unfixed, "failed")):
        task, attempt = tasks[task_id], found[task_id]["attempts"][0]
        assert (f"{task_id} {task.entry_point} [{task.bug_type}]: "
                f"{found[task_id]['outcome']}") in shown
        assert f"attempt 1: {status}" in shown
        for text in (attempt["reply"], attempt["code"], attempt["diff"] or "(unchanged)"):
            assert html.escape(text) in shown
    page = html_report.read_text(encoding="utf-8")
    assert "pass@1 = 50.0% (1/2) = 0.5000" in page
    assert '<table class="humanfix-bug-types">' in page


def test_the_html_report_renders_in_a_headless_browser(html_report, tmp_path):
    """The page as a person sees it: pytest-html renders rows from its data with JavaScript,
    so the DOM after rendering is checked, and a screenshot is kept in reports/ to look at."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does)")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}"]
    url = html_report.as_uri()
    dom = subprocess.run([*command, "--dump-dom", url], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    # The rendered rows, not the data blob the page is rendered from.
    rows = dict(re.findall(r'<tbody class="results-table-row \w+" id="([^"]+)">(.*?)</tbody>',
                           dom, re.S))
    assert len(rows) == 2
    unfixed = rows["humanevalfix::Python_1_separate_paren_groups"]
    assert "Python/1 separate_paren_groups [operator misuse]: unfixed" in unfixed
    assert "Here is the fixed function:" in unfixed and "diff against the buggy code" in unfixed
    assert "pass@1 = 50.0% (1/2) = 0.5000" in dom
    screenshot = REPORTS / "html-report.png"
    REPORTS.mkdir(exist_ok=True)
    subprocess.run([*command, f"--screenshot={screenshot}", "--window-size=1400,2400", url],
                   capture_output=True, timeout=120, check=True)
    assert screenshot.stat().st_size > 10_000
