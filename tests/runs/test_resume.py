"""--humanfix-resume: a run killed part way leaves a JSONL that a resumed run finishes, with
exactly one record per task and no task evaluated twice."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

TASKS = 8

# Slows every evaluation and logs which task was evaluated, so the test can kill the run part
# way and later prove that no finished task ran again.
SLOW_AND_LOGGED = """\
with open(os.environ["HUMANFIX_TEST_LOG"], "a") as log:
    log.write(task.task_id + "\\n")
time.sleep(float(os.environ.get("HUMANFIX_TEST_DELAY", "0")))"""


def logged(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_interrupted_run_resumes_to_one_record_per_task(humanfix_pytester, tmp_path, how,
                                                         monkeypatch, before_each_task,
                                                         spawn_pytest, read_records):
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    # A slow run of TASKS tasks, stopped with `how` once three records are on disk.
    before_each_task(SLOW_AND_LOGGED)
    first = spawn_pytest("-p", "no:cacheprovider", "--humanfix-model", "canonical",
                         "--humanfix-max", str(TASKS),
                         env={"HUMANFIX_TEST_LOG": str(first_log), "HUMANFIX_TEST_DELAY": "0.4"})
    jsonl = first.wait_for_records(3)
    first.send(how)
    stopped = -signal.SIGKILL if how == signal.SIGKILL else pytest.ExitCode.INTERRUPTED
    assert first.finish() == stopped, first.tail()
    before = read_records()  # every line on disk is whole JSON
    assert 3 <= len(before) < TASKS
    if how == signal.SIGINT:  # the summary says the figure covers part of the selection
        summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
        assert summary["coverage"]["why"] == [f"{TASKS - len(before)} interrupted"]
    if how == signal.SIGKILL:
        # A kill during a write leaves a torn last line; the resumed run must repair it.
        with jsonl.open("a") as handle:
            handle.write('{"run_id": "torn", "task_id": "Pyth')

    monkeypatch.setenv("HUMANFIX_TEST_LOG", str(second_log))
    # Resumed records reach xdist workers through workerinput; a plain run reads them directly.
    workers = ("-n", "2") if how == signal.SIGKILL else ()
    result = humanfix_pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--humanfix-model", "canonical", "--humanfix-max", str(TASKS),
        "--humanfix-resume", *workers)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=TASKS)
    result.stdout.fnmatch_lines([f"resumed: {len(before)} task(s) reported from *"])

    after = read_records()
    task_ids = [r["task_id"] for r in after]
    assert sorted(task_ids) == sorted(f"Python/{n}" for n in range(TASKS))
    assert len(set(task_ids)) == TASKS
    assert after[:len(before)] == before  # appended to, not rewritten
    done_before = {r["task_id"] for r in before}
    assert done_before.isdisjoint(logged(second_log))
    assert sorted(logged(second_log)) == sorted(set(task_ids) - done_before)
    assert len({r["run_id"] for r in after}) == 2


def test_resumed_items_reproduce_recorded_outcomes(humanfix_pytester, read_records):
    first = humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "buggy",
                                        "--humanfix-max", "3")
    first.assert_outcomes(failed=3)
    again = humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "buggy",
                                        "--humanfix-max", "5", "--humanfix-resume")
    again.assert_outcomes(failed=5)
    # A resumed item fails with the recorded report, as if it had just run.
    again.stdout.fnmatch_lines(["Python/0 has_close_elements [[]missing logic]: not fixed",
                                "first failure:"])
    lines = read_records()
    assert [r["task_id"] for r in lines] == [f"Python/{n}" for n in range(5)]
    first_run, second_run = lines[0]["run_id"], lines[4]["run_id"]
    assert first_run != second_run
    assert [r["run_id"] for r in lines] == [first_run] * 3 + [second_run] * 2
    junit = (humanfix_pytester.path / "reports" / "junit.xml").read_text()
    assert junit.count(f'name="resumed_from" value="{first_run}"') == 3


def test_resume_under_another_protocol_is_refused(humanfix_pytester, read_records):
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "canonical",
                                "--humanfix-max", "2").assert_outcomes(passed=2)
    result = humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "buggy",
                                         "--humanfix-max", "2", "--humanfix-iters", "1",
                                         "--humanfix-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-resume: *humanfix.jsonl record 1 (Python/0) was made "
                                 "under another protocol: model: 'canonical' there, 'buggy' here;"
                                 " agent: 'repair' there, 'rewrite' here; iters: 0 there, 1 "
                                 "here*"])
    assert len(read_records()) == 2


def test_records_written_before_the_prompt_kind_was_recorded_resume_as_auto(humanfix_pytester,
                                                                             read_jsonl):
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "canonical",
                                "--humanfix-max", "2").assert_outcomes(passed=2)
    jsonl = humanfix_pytester.path / "reports" / "humanfix.jsonl"
    older = read_jsonl(jsonl)
    for record in older:
        del record["protocol"]["prompt"]
    jsonl.write_text("".join(json.dumps(record) + "\n" for record in older))
    result = humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model",
                                         "canonical", "--humanfix-max", "3", "--humanfix-resume")
    result.assert_outcomes(passed=3)
    lines = read_jsonl(jsonl)
    assert [r["run_id"] for r in lines[:2]] == [r["run_id"] for r in older]
    assert len(lines) == 3 and lines[2]["protocol"]["prompt"] == "auto"


def test_resume_reruns_harness_errors_and_keeps_one_record(humanfix_pytester, tmp_path,
                                                           read_records):
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"task_id": "Python/999", "completion": "x"}) + "\n")
    humanfix_pytester.runpytest("-p", "no:cacheprovider", f"--humanfix-model=replay:{replay}",
                                "--humanfix-max", "2").assert_outcomes(errors=2)
    assert [r["outcome"] for r in read_records()] == ["error", "error"]
    replay.write_text("".join(json.dumps({"task_id": f"Python/{n}", "completion": "x"}) + "\n"
                              for n in range(2)))
    result = humanfix_pytester.runpytest("-p", "no:cacheprovider",
                                         f"--humanfix-model=replay:{replay}",
                                         "--humanfix-max", "2", "--humanfix-resume")
    result.assert_outcomes(failed=2)
    assert [r["outcome"] for r in read_records()] == ["unfixed", "unfixed"]


def test_corrupt_line_in_the_middle_is_refused(humanfix_pytester):
    jsonl = humanfix_pytester.path / "reports" / "humanfix.jsonl"
    humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model", "canonical",
                                "--humanfix-max", "2").assert_outcomes(passed=2)
    first, second = jsonl.read_text().splitlines()
    jsonl.write_text(first + "\n{not json\n" + second + "\n")
    result = humanfix_pytester.runpytest("-p", "no:cacheprovider", "--humanfix-model",
                                         "canonical", "--humanfix-max", "2", "--humanfix-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*line 2 is not a JSON object, and it is not the last line*"])
