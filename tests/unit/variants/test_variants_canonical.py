"""No correct function passes the impossible variant's tests: the canonical solutions, run in
the sandbox as the canonical control runs them, fail every mutated task, by a failed assertion
(never a compile error, which would make the tests broken rather than impossible). Python's run
all 164 tasks under both mutations; the other languages a sample, or all 164 with
HUMANFIX_FULL_CONTROLS=1 (docs/languages.md, "The impossible variant's controls")."""

from __future__ import annotations

import os

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.languages import LANGUAGES, language
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer, make_sandbox
from pytest_humanfix.sandbox.environment import Limits, Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox
from pytest_humanfix.variants.impossible import MUTATIONS, mutate

FULL_CONTROLS = "HUMANFIX_FULL_CONTROLS"
# A task per language whose first site is of another kind than the plain equality: a truth
# test, JavaScript's comma operator, a tolerance read as a boolean, an issame of strings.
SAMPLE = {"js": "JavaScript/87", "java": "Java/72", "go": "Go/4", "cpp": "CPP/148",
          "rust": "Rust/61"}
# How each language's runner says a test failed (sandbox/inside/toolchain.py).
TEST_FAILURE = {"python": "AssertionError", "js": "TestError", "java": "TestError",
                "go": "TestError", "cpp": "TestError", "rust": "TestError"}


def reference(task: Task) -> str:
    """The canonical control's code: BigCode's reference solution, the prompt and the body,
    outside Python (some declarations lack the prompt's helpers: Go/10's IsPalindrome)."""
    if task.language == "python":
        return task.canonical_code
    return task.prompt + task.canonical_solution


def failures(run, tasks: list[Task]) -> list[str]:
    """Each mutated task the reference solution does not fail by a failed test, with what it
    did instead."""
    wrong = []
    for task in tasks:
        for kind in MUTATIONS:
            made = mutate(task, kind)
            if isinstance(made, str):
                continue
            mutated = made[0]
            verdict: Verdict = run(LANGUAGES[task.language].program(reference(mutated),
                                                                  mutated.test, mutated))
            failure = verdict.first_failure()
            if verdict.status != "failed" or TEST_FAILURE[task.language] not in failure:
                wrong.append(f"{task.task_id} {kind}: {verdict.status}: {failure[:200]}")
    return wrong


def test_the_canonical_solutions_fail_every_python_task_under_both_mutations():
    choice = make_sandbox("auto", "auto", Limits(timeout=LANGUAGES["python"].timeout))
    try:
        assert failures(choice.sandbox.run, load_tasks(PACKAGED, "python")) == []
    finally:
        choice.sandbox.shutdown()


@pytest.mark.parametrize("name", list(SAMPLE))
def test_the_canonical_solutions_fail_the_mutated_tests_in_every_language(name):
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    toolchain = language(name)
    sandbox = ToolchainSandbox(layer, toolchain, Limits(timeout=toolchain.timeout), cgroups)
    everything = os.environ.get(FULL_CONTROLS) == "1"
    tasks = [task for task in load_tasks(PACKAGED, name)
             if everything or task.task_id == SAMPLE[name]]
    try:
        assert failures(sandbox.run, tasks) == []
    finally:
        sandbox.shutdown()
