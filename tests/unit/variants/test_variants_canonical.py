"""No correct function passes the impossible variant's tests: the canonical solutions, run in
the sandbox as the canonical control runs them, fail every mutated task, by a failed assertion
(never a compile error, which would make the tests broken rather than impossible). Python's run
all 161 mutated tasks under both mutations; the other languages a sample, or all 164 with
HUMANFIX_FULL_CONTROLS=1 (docs/languages.md, "The impossible variant's controls")."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.languages import LANGUAGES, language
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer, make_sandbox
from pytest_humanfix.sandbox.environment import Limits, Sandbox, Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox
from pytest_humanfix.variants.impossible import MUTATIONS, mutate

FULL_CONTROLS = "HUMANFIX_FULL_CONTROLS"
BUGGY_LIMIT = 3.0
# A task per language whose first site is of another kind than the plain equality: a truth
# test, JavaScript's comma operator, a tolerance read as a boolean (and Go/111's map, whose
# keys are left alone: Go refuses a literal with a key twice), an issame of strings.
SAMPLE = {"js": ("JavaScript/87",), "java": ("Java/72",), "go": ("Go/4", "Go/111"),
          "cpp": ("CPP/148",), "rust": ("Rust/61",)}
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
            verdict: Verdict = run(LANGUAGES[task.language].job(reference(mutated),
                                                                  mutated.test, mutated))
            failure = verdict.first_failure()
            if verdict.status != "failed" or TEST_FAILURE[task.language] not in failure:
                wrong.append(f"{task.task_id} {kind}: {verdict.status}: {failure[:200]}")
    return wrong


@pytest.fixture(scope="module")
def python() -> Iterator[Sandbox]:
    choice = make_sandbox("auto", "auto", Limits(timeout=LANGUAGES["python"].timeout))
    yield choice.sandbox
    choice.sandbox.shutdown()


def test_the_canonical_solutions_fail_every_python_task_under_both_mutations(python):
    assert failures(python.run, load_tasks(PACKAGED, "python")) == []


def test_the_buggy_code_left_as_it_is_passes_two_one_off_tasks_and_no_conflicting_one(python):
    """A reply that changes nothing passes where the bug changes exactly the value the one-off
    mutation changes, and nothing else the tests check: the floor of a one-off cheating rate
    (docs/trust.md#the-cheating-rate). No function passes a conflicting task's tests."""
    passed: dict[str, list[str]] = {kind: [] for kind in MUTATIONS}
    for task in load_tasks(PACKAGED, "python"):
        for kind in MUTATIONS:
            made = mutate(task, kind)
            if isinstance(made, str):
                continue
            program = LANGUAGES["python"].job(task.buggy_code, made[0].test, made[0])
            # Three buggy solutions loop forever: a short limit stops them (they never pass).
            if python.run(program, BUGGY_LIMIT).status == "passed":
                passed[kind].append(task.task_id)
    assert passed == {"one-off": ["Python/43", "Python/92"], "conflicting": []}


@pytest.mark.parametrize("name", list(SAMPLE))
def test_the_canonical_solutions_fail_the_mutated_tests_in_every_language(name):
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    toolchain = language(name)
    sandbox = ToolchainSandbox(layer, toolchain, Limits(timeout=toolchain.timeout), cgroups)
    everything = os.environ.get(FULL_CONTROLS) == "1"
    # A known failure's reference solution cannot pass here (Go/27 does not compile): it is
    # counted apart in every variant, never scored.
    tasks = [task for task in load_tasks(PACKAGED, name)
             if (everything and task.task_id not in toolchain.known_failures)
             or task.task_id in SAMPLE[name]]
    try:
        assert failures(sandbox.run, tasks) == []
    finally:
        sandbox.shutdown()
