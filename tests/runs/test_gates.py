"""CI gates: --humanfix-fail-under and --humanfix-baseline decide the exit status, and the
outcomes shown (terminal and JUnit) agree with it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_humanfix.dataset import content_hash, load_tasks
from pytest_humanfix.protocol import RunProtocol
from pytest_humanfix.settings import Settings

TASKS = 4
BASE = ("-p", "no:cacheprovider", "--humanfix-max", str(TASKS))


def junit_counts(pytester: pytest.Pytester) -> dict[str, int]:
    suite = ET.parse(pytester.path / "reports" / "junit.xml").getroot().find("testsuite")
    return {key: int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")}


def junit_property(pytester: pytest.Pytester, name: str) -> str | None:
    root = ET.parse(pytester.path / "reports" / "junit.xml").getroot()
    for prop in root.iter("property"):
        if prop.get("name") == name:
            return prop.get("value")
    return None


def humanfix_section(result: pytest.RunResult) -> list[str]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "humanfix summary" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return lines[start + 1:end]


def test_canonical_holds_fail_under_0_9(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         "--humanfix-fail-under", "0.9")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=TASKS)
    assert humanfix_section(result)[-1].startswith("humanfix gates held: pass@1 1.0000")
    assert junit_counts(humanfix_pytester) == {"tests": TASKS, "failures": 0, "errors": 0,
                                               "skipped": 0}


def test_a_fail_under_above_one_is_refused_before_any_task(humanfix_pytester):
    # A gate no run can hold, most likely a percentage without its sign: refused at the start,
    # not after every task has run.
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         "--humanfix-fail-under", "1.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humanfix-fail-under / humanfix_fail_under: '1.01' is "
                                 "not a fraction: write 0.0101 or 1.01%"])
    assert not (humanfix_pytester.path / "reports" / "humanfix.jsonl").exists()


def test_buggy_fails_fail_under_with_unfixed_tasks_as_expected_failures(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", *BASE,
                                         "--humanfix-fail-under", "0.1", "-rx")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # No item failed: the gate alone fails the run, and says so last.
    result.assert_outcomes(xfailed=TASKS)
    assert humanfix_section(result)[-1].startswith(
        "humanfix gate FAILED: pass@1 0.0000 over 4 scored task(s) is under")
    result.stdout.fnmatch_lines(["XFAIL *Python_0_has_close_elements - not fixed"])
    # The failed gate is JUnit's one failure, as the exit status says; the tasks are skipped.
    assert junit_counts(humanfix_pytester) == {"tests": TASKS + 1, "failures": 1, "errors": 0,
                                               "skipped": TASKS}
    root = ET.parse(humanfix_pytester.path / "reports" / "junit.xml").getroot()
    messages = [s.get("message") for s in root.iter("skipped")]
    assert all(m.startswith("not fixed") for m in messages) and len(messages) == TASKS
    [failure] = root.iter("failure")
    assert failure.get("message") == junit_property(humanfix_pytester, "humanfix_gate")


def test_buggy_holds_fail_under_zero(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", *BASE,
                                         "--humanfix-fail-under", "0")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=TASKS)


def test_without_a_gate_unfixed_tasks_fail(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", *BASE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=TASKS)
    assert not any("humanfix gate" in line for line in result.outlines)


def test_gate_over_xdist_agrees_with_outcomes(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", *BASE, "-n", "2",
                                         "--humanfix-fail-under", "0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(xfailed=TASKS)
    assert humanfix_section(result)[-1].startswith("humanfix gate FAILED")


def test_harness_errors_stay_errors_under_a_gate(humanfix_pytester, tmp_path):
    # A replay file with no reply for the tasks: every task is a harness error.
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"task_id": "Python/999", "completion": "x"}) + "\n")
    result = humanfix_pytester.runpytest(f"--humanfix-model=replay:{replay}", *BASE,
                                         "--humanfix-fail-under", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=TASKS)


# --- baseline -------------------------------------------------------------------------------

def ids(numbers) -> list[str]:
    return [f"Python/{n}" for n in numbers]


def write_baseline(path: Path, dataset: Path, outcomes: dict[str, str], **protocol) -> Path:
    """A hand-made baseline: records with this run's protocol unless told otherwise."""
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    lines = []
    for task_id, outcome in outcomes.items():
        lines.append(json.dumps({
            "run_id": "baseline", "model": "earlier", "task_id": task_id,
            "entry_point": tasks[task_id].entry_point, "bug_type": tasks[task_id].bug_type,
            "outcome": outcome,
            "protocol": {**RunProtocol.of(Settings(), "python").to_json(), **protocol},
            "dataset_hash": content_hash(list(tasks.values())),
        }))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_replay(path: Path, dataset: Path, fixed: set[str], chosen: list[str]) -> Path:
    """Replies that fix exactly the tasks in `fixed` (canonical code) and no other."""
    tasks = {t.task_id: t for t in load_tasks(str(dataset))}
    with path.open("w") as handle:
        for task_id in chosen:
            task = tasks[task_id]
            code = task.canonical_code if task_id in fixed else task.buggy_code
            handle.write(json.dumps({"task_id": task_id,
                                     "completion": f"```python\n{code}```"}) + "\n")
    return path


def test_ten_regressions_and_no_improvement_fail_the_baseline_gate(humanfix_pytester, dataset,
                                                                   tmp_path):
    baseline = write_baseline(tmp_path / "base.jsonl", dataset,
                              {t: "fixed" for t in ids(range(10))})
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "-p", "no:cacheprovider",
                                         "--humanfix-max", "10", f"--humanfix-baseline={baseline}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(xfailed=10)
    section = humanfix_section(result)
    assert "regressions: " + ", ".join(ids(range(10))) in section
    assert "improvements: none" in section
    assert section[-1] == ("humanfix gate FAILED: 10 regression(s), 0 improvement(s) against the "
                           "baseline: exact McNemar one-sided p=0.0009766 < alpha 0.05")


def mixed_run(pytester, dataset, tmp_path, *extra):
    """Now: Python/0-4 fixed, 5-9 not. Baseline: 0,1 not fixed (improvements), 2-4 fixed,
    5-7 fixed (regressions), 8-9 not fixed."""
    chosen = ids(range(10))
    replay = write_replay(tmp_path / "replay.jsonl", dataset, set(ids(range(5))), chosen)
    outcomes = {t: "fixed" for t in ids(range(2, 8))}
    outcomes.update({t: "unfixed" for t in ids([0, 1, 8, 9])})
    baseline = write_baseline(tmp_path / "base.jsonl", dataset, outcomes)
    return pytester.runpytest(f"--humanfix-model=replay:{replay}", "-p", "no:cacheprovider",
                              "--humanfix-max", "10", f"--humanfix-baseline={baseline}", *extra)


def test_three_regressions_two_improvements_is_not_significant(humanfix_pytester, dataset,
                                                               tmp_path):
    result = mixed_run(humanfix_pytester, dataset, tmp_path)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=5, xfailed=5)
    section = humanfix_section(result)
    assert "regressions: Python/5, Python/6, Python/7" in section
    assert "improvements: Python/0, Python/1" in section
    # The baseline written here says nothing of what computed it, and the verdict says so.
    assert section[-1] == ("humanfix gates held: 3 regression(s), 2 improvement(s) against the "
                           "baseline: exact McNemar one-sided p=0.5 >= alpha 0.05; WARNING: the "
                           "baseline was computed otherwise than this run (computed_by: not "
                           "recorded there, replay; device none here): a regression may be the "
                           "computation's, not the model's (--humanfix-computed-by-mismatch "
                           "error makes this fail)")
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["baseline"]["regressions"] == ids([5, 6, 7])
    assert summary["baseline"]["improvements"] == ids([0, 1])
    assert (summary["baseline"]["both_fixed"], summary["baseline"]["both_unfixed"]) == (3, 2)


def test_max_regressions_fails_where_the_test_does_not(humanfix_pytester, dataset, tmp_path):
    result = mixed_run(humanfix_pytester, dataset, tmp_path, "--humanfix-max-regressions", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert humanfix_section(result)[-1] == (
        "humanfix gate FAILED: 3 regression(s) against the baseline, --humanfix-max-regressions 2")


def test_max_regressions_needs_a_baseline(humanfix_pytester):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         "--humanfix-max-regressions", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-max-regressions*give --humanfix-baseline PATH*"])


def test_baseline_under_another_protocol_is_refused(humanfix_pytester, dataset, tmp_path):
    baseline = write_baseline(tmp_path / "base.jsonl", dataset, {"Python/0": "fixed"}, iters=2)
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         f"--humanfix-baseline={baseline}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*made under another protocol or dataset (iters: 2 there, 0 here)*"])
    assert not (humanfix_pytester.path / "reports" / "humanfix.jsonl").exists()


def test_baseline_written_before_the_prompt_kind_was_recorded_reads_as_auto(
        humanfix_pytester, dataset, tmp_path):
    baseline = write_baseline(tmp_path / "base.jsonl", dataset, {"Python/0": "fixed"})
    older = [json.loads(line) for line in baseline.read_text().splitlines()]
    for record in older:
        del record["protocol"]["prompt"]
    baseline.write_text("".join(json.dumps(record) + "\n" for record in older))
    accepted = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                           f"--humanfix-baseline={baseline}")
    assert accepted.ret == pytest.ExitCode.OK
    refused = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                          "--humanfix-prompt=completion",
                                          f"--humanfix-baseline={baseline}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*(prompt: 'auto' there, 'completion' here)*"])


def test_baseline_of_another_dataset_is_refused(humanfix_pytester, dataset, tmp_path):
    baseline = write_baseline(tmp_path / "base.jsonl", dataset, {"Python/0": "fixed"})
    text = baseline.read_text().replace('"dataset_hash": "', '"dataset_hash": "0')
    baseline.write_text(text)
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         f"--humanfix-baseline={baseline}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*another protocol or dataset (dataset_hash: '0*"])


def test_missing_baseline_file_is_refused(humanfix_pytester, tmp_path):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", *BASE,
                                         f"--humanfix-baseline={tmp_path / 'nope.jsonl'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-baseline: *nope.jsonl is not a file*"])
