"""Timeouts that hold under load: each task's limit is calibrated from its reference solution's
time on this machine and cached (a factor times it, at least a floor, at most a cap); a timeout
is re-run once under a larger limit, beside whatever else runs, before it counts; the record
says which limits applied and whether a re-run happened. The slow test runs canonical solutions
and looping ones together with four times as many workers as cores."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field

import pytest
from sandbox_jobs import script_job

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.sandbox.environment import Verdict
from pytest_humanfix.sandbox.fresh import ProcessSandbox
from pytest_humanfix.sandbox.rerun import RERUN_FACTOR, TaskSandbox
from pytest_humanfix.session import calibration
from pytest_humanfix.session.calibration import (
    BuiltOnFirstRun,
    CalibrationFile,
    TaskLimit,
    calibrate,
    limit_under,
    task_limit,
)
from pytest_humanfix.settings import Settings


def verdict(status: str, limit: float) -> Verdict:
    return Verdict(status=status, exit_code=None, seconds=limit, stdout="", stderr="",
                   network="none", limit=limit)


@dataclass
class ScriptedSandbox:
    """Answers each run with the next status of its script and notes when each run was."""

    statuses: list[str]
    seconds: float = 0.0
    runs: list[tuple[float, float, float | None]] = field(default_factory=list)
    layer: object = None

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        began = time.monotonic()
        time.sleep(self.seconds)
        self.runs.append((began, time.monotonic(), timeout))
        return verdict(self.statuses.pop(0), timeout or 0.0)

    def shutdown(self) -> None:
        pass


def test_a_timeout_is_rerun_once_under_the_larger_limit_and_the_second_verdict_kept():
    slow_then_fine = ScriptedSandbox(["timeout", "passed"])
    got = TaskSandbox(slow_then_fine, 1.5, 3.0).run("program")
    assert got.status == "passed" and got.rerun and got.limit == 3.0
    assert [limit for _, _, limit in slow_then_fine.runs] == [1.5, 3.0]

    loops = ScriptedSandbox(["timeout", "timeout", "passed"])
    got = TaskSandbox(loops, 1.0, 2.0).run("program")
    assert got.status == "timeout" and got.rerun and len(loops.runs) == 2
    assert "limit 2 s;" in got.first_failure()

    fine = ScriptedSandbox(["failed"])
    got = TaskSandbox(fine, 1.0, 2.0).run("program")
    assert got.status == "failed" and not got.rerun and len(fine.runs) == 1

    # Without a re-run limit, or with an explicit one below the run's own, the re-run gets
    # the first run's limit: never less.
    for task_sandbox, limits in ((TaskSandbox(ScriptedSandbox(["timeout", "passed"]), 2.0),
                                  [2.0, 2.0]),
                                 (TaskSandbox(ScriptedSandbox(["timeout", "passed"]), 1.0, 2.0),
                                  [5.0, 5.0])):
        task_sandbox.run("program", 5.0 if limits[0] == 5.0 else None)
        assert [limit for _, _, limit in task_sandbox.sandbox.runs] == limits


def test_reruns_overlap():
    """No lock holds re-runs one after another: tasks re-run at once run side by side."""
    sandboxes = [ScriptedSandbox(["timeout", "passed"], seconds=0.3) for _ in range(3)]
    threads = [threading.Thread(target=TaskSandbox(s, 1.0, 2.0).run, args=("program",))
               for s in sandboxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reruns = [s.runs[1] for s in sandboxes]
    assert [limit for _, _, limit in reruns] == [2.0] * 3
    # Every re-run began before any of them ended.
    assert max(began for began, _, _ in reruns) < min(ended for _, ended, _ in reruns)


def test_the_limit_reaches_the_sandbox():
    got = ProcessSandbox().run(script_job("while True:\n    pass\n"), timeout=0.5)
    assert got.status == "timeout" and got.limit == 0.5 and 0.5 <= got.seconds < 5


def test_calibration_is_measured_once_per_dataset_and_machine(dataset, monkeypatch, tmp_path):
    tasks = load_tasks(str(dataset))[:3]
    sandbox = ScriptedSandbox(["passed"] * 12)
    first = calibrate(tasks, sandbox, CalibrationFile("hash-a", tmp_path), 100.0)
    assert set(first) == {t.task_id for t in tasks} and len(sandbox.runs) == 3
    assert [limit for _, _, limit in sandbox.runs] == [100.0] * 3
    # A later run (a new store object, as a new process has) reads the file.
    assert calibrate(tasks, sandbox, CalibrationFile("hash-a", tmp_path), 100.0) == first
    assert len(sandbox.runs) == 3
    calibrate(tasks[:1], sandbox, CalibrationFile("hash-b", tmp_path), 100.0)  # another dataset
    assert len(sandbox.runs) == 4
    monkeypatch.setattr(calibration, "machine", lambda: "another machine")
    calibrate(tasks, sandbox, CalibrationFile("hash-a", tmp_path), 100.0)
    assert len(sandbox.runs) == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hash-a.json", "hash-b.json"]
    calibrate(tasks, sandbox, CalibrationFile("hash-a", tmp_path), 100.0, anew=True)
    assert len(sandbox.runs) == 10  # --cache-clear times them again


def test_a_torn_calibration_file_is_measured_again(dataset, tmp_path):
    tasks = load_tasks(str(dataset))[:2]
    (tmp_path / "hash-a.json").write_text('{"4 cpus, Linux": {"Python/0": 0.0')
    sandbox = ScriptedSandbox(["passed"] * 2)
    assert set(calibrate(tasks, sandbox, CalibrationFile("hash-a", tmp_path), 100.0)) == \
        {t.task_id for t in tasks}
    assert len(sandbox.runs) == 2
    assert list(json.loads((tmp_path / "hash-a.json").read_text())) == [calibration.machine()]


def test_calibration_outlives_pytests_cache(humanfix_pytester, monkeypatch, tmp_path):
    """Kept per user, so runs under -p no:cacheprovider (CI jobs, benchmarks) reuse it, and
    --cache-clear measures again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    store = tmp_path / "pytest-humanfix" / "calibration"
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model=canonical",
                                "--humanfix-max=2").assert_outcomes(passed=2)
    [path] = store.iterdir()
    times = json.loads(path.read_text())[calibration.machine()]
    assert sorted(times) == ["Python/0", "Python/1"]
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model=canonical",
                                "--humanfix-max=2").assert_outcomes(passed=2)
    assert json.loads(path.read_text())[calibration.machine()] == times
    humanfix_pytester.runpytest("--cache-clear", "--humanfix-model=canonical",
                                "--humanfix-max=2").assert_outcomes(passed=2)
    assert json.loads(path.read_text())[calibration.machine()] != times


def test_a_tasks_limit_is_the_factor_times_its_reference_above_the_floor_below_the_cap():
    assert task_limit(0.003, 4.0, 1.0, 10.0) == TaskLimit(
        seconds=1.0, rerun_seconds=2.0, reference_seconds=0.003, factor=4.0, floor=1.0, cap=10.0)
    slower = task_limit(0.8, 4.0, 1.0, 10.0)
    assert (slower.seconds, slower.rerun_seconds) == (3.2, 6.4)
    # The cap bounds the limit and the re-run's.
    capped = task_limit(0.8, 4.0, 1.0, 5.0)
    assert (capped.seconds, capped.rerun_seconds) == (3.2, 5.0)
    at_cap = task_limit(3.0, 4.0, 1.0, 10.0)
    assert (at_cap.seconds, at_cap.rerun_seconds) == (10.0, 10.0)
    # A cap under the floor wins: --humanfix-timeout is the most any execution gets.
    assert task_limit(0.003, 4.0, 1.0, 0.5).seconds == 0.5
    # A task whose reference was not timed runs under the cap.
    assert task_limit(None, 4.0, 1.0, 20.0).seconds == 20.0


def test_the_options_set_each_languages_limits():
    """--humanfix-timeout-factor, --humanfix-timeout-floor, and --humanfix-timeout (else
    BigCode's limit for the language) as the cap."""
    defaults = Settings()
    assert limit_under(defaults, "python", 0.003).seconds == defaults.timeout_floor
    assert limit_under(defaults, "rust", 0.5).cap == 300.0
    assert limit_under(defaults, "go", None).seconds == 20.0
    given = Settings(timeout=3.0, timeout_floor=0.25, timeout_factor=20.0)
    assert limit_under(given, "go", 0.1) == TaskLimit(
        seconds=2.0, rerun_seconds=3.0, reference_seconds=0.1, factor=20.0, floor=0.25, cap=3.0)


def test_a_toolchain_is_built_only_when_a_reference_is_timed(dataset, tmp_path):
    """The compile caches of a language cost seconds: a calibration read from the cache
    builds none."""
    tasks = load_tasks(str(dataset))[:2]
    built = []

    def build() -> ScriptedSandbox:
        built.append(ScriptedSandbox(["passed"] * 2))
        return built[-1]

    first = BuiltOnFirstRun(build)
    calibrate(tasks, first, CalibrationFile("hash-a", tmp_path), 100.0)
    first.shutdown()
    assert len(built) == 1 and len(built[0].runs) == 2
    again = BuiltOnFirstRun(build)
    calibrate(tasks, again, CalibrationFile("hash-a", tmp_path), 100.0)
    again.shutdown()
    assert len(built) == 1


def test_a_looping_candidate_is_stopped_at_its_tasks_limit_and_rerun_at_the_larger_one(
        humanfix_pytester, records_by_task, monkeypatch, tmp_path):
    """Python/10's buggy solution never returns. Under the default limits its execution stops
    at the floor its fast reference gives it, not at Python's 10 s, and runs once more under
    twice that; the record says which limits applied."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model=buggy",
                                "--humanfix-task=Python/10").assert_outcomes(failed=1)
    record = records_by_task()["Python/10"]
    limit, verdict = record["time_limit"], record["verdict"]
    defaults = Settings()
    assert limit == {"seconds": defaults.timeout_floor,
                     "rerun_seconds": RERUN_FACTOR * defaults.timeout_floor,
                     "canonical_seconds": limit["canonical_seconds"],
                     "factor": defaults.timeout_factor, "floor": defaults.timeout_floor,
                     "cap": 10.0}
    assert 0 < limit["canonical_seconds"] * defaults.timeout_factor < defaults.timeout_floor
    assert verdict["status"] == "timeout" and verdict["rerun"]
    assert verdict["limit"] == limit["rerun_seconds"] < 10.0
    assert verdict["seconds"] < 10.0
    assert f"limit {limit['rerun_seconds']:g} s" in record["failure"]


def test_a_calibrated_limit_lets_the_canonical_pass_where_the_floor_alone_cannot(
        humanfix_pytester, records_by_task):
    """A limit of 1 ms times every execution out; the calibrated limit, k times what the
    canonical solution took, over a floor of 1 ms, does not."""
    args = ("-p", "no:cacheprovider", "--humanfix-model=canonical", "--humanfix-max=2",
            "--humanfix-timeout-floor=0.001")
    result = humanfix_pytester.runpytest(*args, "--humanfix-timeout-factor=20")
    result.assert_outcomes(passed=2)
    for record in records_by_task().values():
        limit = record["time_limit"]
        assert limit["factor"] == 20.0 and limit["floor"] == 0.001
        assert limit["seconds"] == pytest.approx(20 * limit["canonical_seconds"], rel=1e-3)
        assert record["verdict"]["limit"] in (limit["seconds"], limit["rerun_seconds"])
        assert record["verdict"]["status"] == "passed"


# The three buggy solutions that never return.
LOOPING = {"Python/10", "Python/156", "Python/160"}


@pytest.mark.slow
def test_under_four_workers_per_core_no_canonical_times_out_and_loops_are_caught(
        humanfix_pytester, dataset, records_by_task):
    """One run, four workers per core, of replies worded as the controls' that hold each task's
    canonical solution but the looping tasks' buggy one: no canonical solution times out for
    want of CPU, and each loop is caught, after one re-run under the larger limit, under its
    calibrated limits."""
    code = {task.task_id: task.buggy_code if task.task_id in LOOPING else task.canonical_code
            for task in load_tasks(str(dataset))}
    replies = humanfix_pytester.path / "replies.jsonl"
    replies.write_text("".join(json.dumps({
        "task_id": task, "completion": f"Here is the fixed function:\n\n```python\n{body}```\n",
    }) + "\n" for task, body in code.items()))
    workers = 4 * (os.cpu_count() or 1)
    result = humanfix_pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--humanfix-model=replay:{replies}", "-n", str(workers),
        timeout=3000)
    result.assert_outcomes(passed=164 - len(LOOPING), failed=len(LOOPING))
    records = records_by_task()
    assert len(records) == 164
    assert {task for task, r in records.items() if r["verdict"]["status"] != "passed"} == LOOPING
    for task in LOOPING:
        verdict = records[task]["verdict"]
        assert verdict["status"] == "timeout" and verdict["rerun"], records[task]
        limit = records[task]["time_limit"]
        assert verdict["limit"] == limit["rerun_seconds"] > limit["seconds"]
    result.stdout.fnmatch_lines([f"timeouts: {len(LOOPING)} graded run(s) timed out; *"])
    reruns = sorted(task for task, r in records.items()
                    if r["verdict"]["rerun"] and task not in LOOPING)
    print(f"under load: {164 - len(LOOPING)} canonical fixed, {len(reruns)} of them re-run after "
          f"a first timeout: {reruns}; loops caught: {sorted(LOOPING)}")
