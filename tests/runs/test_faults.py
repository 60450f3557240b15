"""Broken infrastructure loses nothing: a worker that dies mid-task, Ctrl-C, an unwritable report
folder, an unavailable sandbox layer; and the time limits name which one fired."""

from __future__ import annotations

import json
import signal
import xml.etree.ElementTree as ET

import pytest

from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import Limits, Verdict, first_failure
from pytest_humanfix.sandbox.program import build_program


def test_worker_dying_mid_task_runs_it_once_more_then_scores_it_not_fixed(
        humanfix_pytester: pytest.Pytester, before_each_task, records_by_task) -> None:
    # Kills the xdist worker (not the sandbox: the harness process itself) each time it
    # evaluates Python/2, as a segfault in a native library or the OOM killer would.
    before_each_task('if task.task_id == "Python/2" and os.environ.get("PYTEST_XDIST_WORKER"):\n'
                     '    os._exit(7)')
    result = humanfix_pytester.runpytest_subprocess(
        "--humanfix-model=canonical", "--humanfix-max=6", "-n", "2", "-p", "no:cacheprovider")
    by_task = records_by_task()
    assert sorted(by_task) == [f"Python/{n}" for n in range(6)]
    crashed = by_task.pop("Python/2")
    assert crashed["outcome"] == "error"
    assert "died while running Python/2" in crashed["error"]
    assert crashed["worker"] in ("gw0", "gw1", "gw2", "gw3")
    # The first crash is kept as the first try; the second, on another worker, stands.
    assert crashed["first_try"]["outcome"] == "error"
    assert "died while running Python/2" in crashed["first_try"]["error"]
    assert {r["outcome"] for r in by_task.values()} == {"fixed"}
    assert not any("first_try" in r for r in by_task.values())
    result.stdout.fnmatch_lines(["*pass@1 = 83.3% (5/6)*",
                                 "*fixed 5, not fixed 0, errors 1 (harness faults, scored not "
                                 "fixed)*",
                                 "WARNING: 1 task(s) ended in a harness error, scored not fixed: "
                                 "Python/2 (retried)"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_task_whose_worker_died_once_is_scored_on_its_retry(
        humanfix_pytester: pytest.Pytester, before_each_task, records_by_task) -> None:
    marker = humanfix_pytester.path / "crashed-once"
    before_each_task(f'if task.task_id == "Python/2" and not os.path.exists({str(marker)!r}):\n'
                     f'    open({str(marker)!r}, "w").close()\n'
                     '    os._exit(7)')
    result = humanfix_pytester.runpytest_subprocess(
        "--humanfix-model=canonical", "--humanfix-max=4", "-n", "2", "-p", "no:cacheprovider")
    assert marker.exists()
    retried = records_by_task()["Python/2"]
    assert retried["outcome"] == "fixed"
    assert "died while running Python/2" in retried["first_try"]["error"]
    result.stdout.fnmatch_lines(["*pass@1 = 100.0% (4/4)*",
                                 "retried after a harness error: 1 task(s), 1 finished on the "
                                 "retry"])
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert (summary["tasks"]["retried"], summary["tasks"]["errors"]) == (1, 0)
    assert result.ret == pytest.ExitCode.OK


def test_ctrl_c_leaves_valid_jsonl_and_junit(humanfix_pytester: pytest.Pytester, spawn_pytest,
                                             read_records) -> None:
    """SIGINT to the whole process group, as a terminal sends it, in the middle of a run."""
    run = spawn_pytest("--humanfix-model=canonical", "-n", "2", "-p", "no:cacheprovider", "-q")
    run.wait_for_records(10)
    run.send(signal.SIGINT, whole_group=True)
    assert run.finish() == pytest.ExitCode.INTERRUPTED, run.tail()
    records = read_records()  # every line whole JSON
    assert 10 <= len(records) < 164, "the run was not interrupted in the middle"
    assert all(r["outcome"] for r in records)
    suite = ET.parse(humanfix_pytester.path / "reports" / "junit.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) >= 1


def test_unwritable_report_folder_is_a_usage_error_before_any_work(
        humanfix_pytester: pytest.Pytester) -> None:
    # Root may write anywhere chmod forbids; a folder below a regular file cannot exist.
    blocker = humanfix_pytester.path / "not-a-folder"
    blocker.write_text("a file")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical",
                                         f"--humanfix-report-dir={blocker}/reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*cannot write results to {blocker}/reports/humanfix.jsonl:"
                                 " Not a directory. Choose a writable place with "
                                 "--humanfix-report-dir*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_explicit_bwrap_where_it_is_missing_is_a_usage_error(
        humanfix_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(humanfix_pytester.path))  # no bwrap on it
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-sandbox=bwrap")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-sandbox bwrap: bwrap is not installed*"])


def test_auto_says_which_layer_once_at_start(humanfix_pytester: pytest.Pytester,
                                             read_records) -> None:
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=2", "-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["humanfix sandbox: bwrap layer: read-only file system*"
                                 "(auto: bwrap works)"])
    assert result.stdout.str().count("humanfix sandbox: bwrap layer") == 1
    layers = {(r["sandbox"], r["verdict"]["layer"])
              for r in read_records()}
    assert layers == {("bwrap", "bwrap")}


def test_auto_falling_back_to_process_says_what_it_does_not_protect(
        humanfix_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        read_records) -> None:
    monkeypatch.setenv("PATH", str(humanfix_pytester.path))
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "humanfix sandbox: process layer*(auto fell back: bwrap is not installed*",
        "humanfix sandbox: the process layer does NOT protect against: writes and deletions*"])
    assert read_records()[0]["verdict"]["layer"] == "process"


@pytest.mark.parametrize("executor", ["fresh", "warm"])
def test_the_report_names_the_limit_that_fired(executor: str) -> None:
    wall = make_sandbox("auto", executor, Limits(timeout=1)).sandbox.run(
        build_program("", "while True:\n    pass"))
    assert wall.status == "timeout"
    assert "sandbox wall-clock limit" in wall.first_failure()
    # The candidate lowers its own CPU limit: SIGXCPU comes well before the wall clock.
    cpu = make_sandbox("auto", executor, Limits(timeout=20)).sandbox.run(build_program(
        "", "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (1, 2))\n"
            "while True:\n    pass"))
    assert cpu.status == "failed"
    assert cpu.first_failure() == "killed by SIGXCPU (CPU time limit)"


def test_first_failure_names_each_limit() -> None:
    def verdict(status: str, code: int | None) -> Verdict:
        return Verdict(status=status, exit_code=code, seconds=3.0, stdout="", stderr="",
                       network="bwrap")

    assert "sandbox wall-clock limit" in first_failure(verdict("timeout", None))
    assert "CPU time limit" in first_failure(verdict("failed", -signal.SIGXCPU))
    assert "file size limit" in first_failure(verdict("failed", -signal.SIGXFSZ))
