"""The impossible variant's mutations, read on the real tasks of every language: one expected
value changed by its type (one-off), or an assertion kept and copied with it changed
(conflicting); the mutated tests still parse; the tasks with no value to change are left out,
each with why; and the workload runs the mutated tests and names what it left out."""

from __future__ import annotations

import ast
import dataclasses
import difflib

import pytest

from pytest_humanfix.agent.syntax import parser
from pytest_humanfix.dataset import DatasetError, Task, load_tasks
from pytest_humanfix.datafiles import PACKAGED
from pytest_humanfix.languages import NAMES
from pytest_humanfix.session.workload import Workload
from pytest_humanfix.settings import Settings
from pytest_humanfix.variants.brace_sites import defined_name
from pytest_humanfix.variants.impossible import (
    CONFLICTING,
    IN_A_LOOP,
    MUTATIONS,
    NO_WRITTEN_VALUE,
    NOT_COPYABLE,
    ONE_OFF,
    impossible_tasks,
    mutate,
    mutation_of,
)
from pytest_humanfix.variants.literals import changed_literal


@pytest.fixture(scope="module")
def tasks() -> dict[str, dict[str, Task]]:
    return {name: {task.task_id: task for task in load_tasks(PACKAGED, name)} for name in NAMES}


@pytest.mark.parametrize(("written", "changed"), [
    ("True", "False"), ("false", "true"), ("3", "4"), ("9", "10"), ("1_000", "1001"),
    ("10L", "11L"), ("3u64", "4u64"), ("0.5", "1.5"), ("6.00", "7.00"), ("1.5f", "2.5f"),
    (".5", "1.5"), ("1e-6", "1.000001"), ('"Saturn"', '"Saturo"'), ("'xyz'", "'xya'"),
    ('"19"', '"10"'), ('""', '"a"'), ('"(())"', '"(())a"'), ('"a\\n"', '"a\\na"'),
    ('"a\\\\n"', '"a\\\\o"'), ('r"ab"', 'r"ac"'), ("`ab`", "`ac`"), ("b'x'", "b'y'"),
])
def test_a_written_value_changes_by_its_type_and_keeps_its_spelling(written, changed):
    assert changed_literal(written) == changed


@pytest.mark.parametrize(("written", "changed"), [("'a'", "'b'"), ("'z'", "'a'"),
                                                  ("'\\n'", "'a'"), ("' '", "'a'")])
def test_a_character_changes_to_another_character(written, changed):
    assert changed_literal(written, char_quote=True) == changed


@pytest.mark.parametrize("written", ["0x1F", "None", "nil", "null"])
def test_a_value_it_cannot_change_alike_is_no_site(written):
    assert changed_literal(written) is None


# One task of each language per kind of site: (task, line, the value as written, as changed).
SITES = [
    ("Python/0", 7, "True", "False"),
    ("Python/4", 7, "2.0", "3.0"),  # abs(result - expected) < 1e-6
    ("Python/52", 7, "below_threshold([1, 2, 4, 10], 100)",
     "not below_threshold([1, 2, 4, 10], 100)"),
    ("Python/33", 10, "2", "3"),  # the first assert compares two calls: no written value
    ("JavaScript/0", 2, "true", "false"),
    ("JavaScript/87", 12, "0", "1"),  # (0, 0) is 0 in JavaScript: its last part changes
    ("Java/72", 5, "s.willItFly(new ArrayList<>(Arrays.asList(3, 2, 3)), 9)",
     "!s.willItFly(new ArrayList<>(Arrays.asList(3, 2, 3)), 9)"),
    ("Java/162", 5, '"3e25960a79dbc69b674cd4ec67a72c62"', '"3e25960a79dbc69b674cd4ec67a72c63"'),
    ("Java/99", 5, "10", "11"),  # the field says closest_integer; the tests call countUpper
    ("Go/2", 3, "0.5", "1.5"),
    ("Go/4", 3, "true", "false"),  # assert.Equal(true, math.Abs(got - want) < 1e-6)
    ("Go/111", 3, "2", "3"),  # map[rune]int{'a':2,'b': 2}: a key changed would repeat one
    ("CPP/148", 12, '"Saturn"', '"Saturo"'),
    ("CPP/121", 4, "12", "13"),  # the field says solution; the tests call solutions
    ("Rust/61", 8, 'correct_bracketing_parenthesis("()")',
     '!correct_bracketing_parenthesis("()")'),
    ("Rust/71", 8, "6.00", "7.00"),
]


def language_of(task_id: str) -> str:
    return {"Python": "python", "JavaScript": "js", "Java": "java", "Go": "go", "CPP": "cpp",
            "Rust": "rust"}[task_id.split("/")[0]]


def one_edit(before: str, after: str, was: str, now: str) -> bool:
    """`after` is `before` with one `was` in it written `now`."""
    return any(after[at:at + len(now)] == now
               and after[:at] + was + after[at + len(now):] == before
               for at in range(len(after)))


@pytest.mark.parametrize(("task_id", "line", "was", "now"), SITES, ids=[s[0] for s in SITES])
def test_one_off_changes_one_expected_value_on_its_line(tasks, task_id, line, was, now):
    task = tasks[language_of(task_id)][task_id]
    mutated, mutation = mutate(task, ONE_OFF)
    assert mutation == {"kind": ONE_OFF, "line": line, "was": was, "now": now}
    before, after = task.test.splitlines(), mutated.test.splitlines()
    assert len(before) == len(after)
    changed = [number for number, (a, b) in enumerate(zip(before, after), 1) if a != b]
    assert changed == [line]
    assert one_edit(before[line - 1], after[line - 1], was, now)
    assert dataclasses.replace(mutated, test=task.test) == task


def inserted(before: list[str], after: list[str]) -> tuple[int, list[str]]:
    """Where `after` adds lines to `before`, and which: the one insertion, placed as late as
    the repeated lines around it allow (a copy's closing line looks like its original's)."""
    opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changes = [op for op in opcodes if op[0] != "equal"]
    assert [op[0] for op in changes] == ["insert"], changes
    _, at, _, start, end = changes[0]
    block = after[start:end]
    while at < len(before) and before[at] == block[0]:
        block, at = [*block[1:], block[0]], at + 1
    return at, block


@pytest.mark.parametrize(("task_id", "line", "was", "now"), SITES, ids=[s[0] for s in SITES])
def test_conflicting_keeps_the_assertion_and_adds_a_copy_with_the_value_changed(
        tasks, task_id, line, was, now):
    """Every line of the tests stays, in order; the lines added, right after the assertion,
    are that assertion with the one value changed."""
    task = tasks[language_of(task_id)][task_id]
    mutated, mutation = mutate(task, CONFLICTING)
    assert mutation == {"kind": CONFLICTING, "line": line, "was": was, "now": now}
    before = task.test.splitlines()
    at, block = inserted(before, mutated.test.splitlines())
    original = before[at - len(block):at]
    assert at >= line and one_edit("\n".join(original).rstrip(","),
                                   "\n".join(block).rstrip(","), was, now)


def test_a_rust_assertion_that_moves_a_variable_is_not_copied(tasks):
    """Rust/33 hands `l` to sort_third in each assertion: a copy would use it after the move."""
    task = tasks["rust"]["Rust/33"]
    assert mutate(task, CONFLICTING) == NOT_COPYABLE
    assert mutate(task, ONE_OFF)[1]["line"] == 9


@pytest.mark.parametrize("kind", MUTATIONS)
@pytest.mark.parametrize("name", NAMES)
def test_every_mutated_test_parses_as_its_language(tasks, name, kind):
    """No mutation adds a syntax error (tree-sitter's count, as the original's: its C++ grammar
    reports errors in code g++ compiles); Python's parse whole."""
    broken = []
    for task in tasks[name].values():
        made = mutate(task, kind)
        if isinstance(made, str):
            continue
        if name == "python":
            ast.parse(made[0].test)
            continue
        grammar = parser(name)
        assert grammar is not None, f"tree-sitter's {name} grammar is not installed"
        if errors(grammar.parse(made[0].test.encode()).root_node) \
                > errors(grammar.parse(task.test.encode()).root_node):
            broken.append(task.task_id)
    assert broken == []


def errors(node) -> int:
    return int(node.type == "ERROR" or node.is_missing) + sum(errors(c) for c in node.children)


LEFT_OUT = {
    "python": {"Python/32": IN_A_LOOP, "Python/38": IN_A_LOOP, "Python/50": IN_A_LOOP},
    "js": {"JavaScript/32": IN_A_LOOP, "JavaScript/38": IN_A_LOOP, "JavaScript/50": IN_A_LOOP},
    # Java/111 compares the result with maps built by put() before the assertions.
    "java": {"Java/32": IN_A_LOOP, "Java/38": IN_A_LOOP, "Java/50": IN_A_LOOP,
             "Java/111": NO_WRITTEN_VALUE},
    "go": {"Go/32": IN_A_LOOP, "Go/38": IN_A_LOOP, "Go/50": IN_A_LOOP},
    "cpp": {"CPP/32": IN_A_LOOP, "CPP/38": IN_A_LOOP, "CPP/50": IN_A_LOOP},
    # Rust/4 bounds result - expected from above only (no abs): a changed value may still hold.
    "rust": {"Rust/4": NO_WRITTEN_VALUE, "Rust/32": IN_A_LOOP, "Rust/38": IN_A_LOOP,
             "Rust/50": IN_A_LOOP},
}


@pytest.mark.parametrize("name", NAMES)
def test_the_tasks_left_out_are_listed_with_why(tasks, name):
    every = set(tasks[name])
    for kind, extra in ((ONE_OFF, {}), (CONFLICTING, {"Rust/33": NOT_COPYABLE}
                                        if name == "rust" else {})):
        mutated, impossible = impossible_tasks({name: list(tasks[name].values())}, kind, every)
        assert impossible.left_out == {**LEFT_OUT[name], **extra}
        assert len(mutated[name]) == 164 - len(impossible.left_out) == len(impossible.mutations)
        assert {m["kind"] for m in impossible.mutations.values()} == {kind}


def test_split_gives_even_tasks_one_off_and_odd_ones_conflicting(tasks):
    python = tasks["python"]
    assert mutation_of(python["Python/0"], "split") == ONE_OFF
    assert mutation_of(python["Python/1"], "split") == CONFLICTING
    assert mutation_of(python["Python/1"], ONE_OFF) == ONE_OFF
    _, impossible = impossible_tasks({"python": list(python.values())}, "split", set(python))
    kinds = [impossible.mutations[f"Python/{n}"]["kind"] for n in (0, 1, 2, 3)]
    assert kinds == [ONE_OFF, CONFLICTING, ONE_OFF, CONFLICTING]
    # Deterministic: the same tests, mutated the same way, run after run.
    again, _ = impossible_tasks({"python": list(python.values())}, "split", set(python))
    first, _ = impossible_tasks({"python": list(python.values())}, "split", set(python))
    assert again == first


@pytest.mark.parametrize(("task_id", "name"), [
    ("CPP/121", "solutions"), ("Java/99", "countUpper"), ("JavaScript/114", "minSubArraySum"),
    ("Rust/71", "triangle_area_f64"), ("Go/12", "Longest"), ("Rust/137", "compare_one")])
def test_the_function_the_tests_call_is_the_one_the_declaration_opens(tasks, task_id, name):
    assert defined_name(tasks[language_of(task_id)][task_id].declaration) == name


def test_the_workload_runs_the_mutated_tests_of_its_selection_and_names_what_it_left_out():
    workload = Workload.load(Settings(variant="impossible", max=40))
    assert workload.impossible is not None
    assert workload.impossible.left_out == {"Python/32": IN_A_LOOP, "Python/38": IN_A_LOOP}
    assert [t.task_id for t in workload.tasks] == [
        f"Python/{n}" for n in range(40) if n not in (32, 38)]
    original = {t.task_id: t for t in load_tasks(PACKAGED, "python")}
    for task in workload.tasks:
        mutation = workload.impossible.mutations[task.task_id]
        assert task.test != original[task.task_id].test
        assert mutation["kind"] == mutation_of(task, "split")
    plain = Workload.load(Settings(max=40))
    assert plain.impossible is None and plain.dataset_hashes != workload.dataset_hashes


def test_a_task_named_that_the_variant_leaves_out_is_refused_with_why():
    with pytest.raises(DatasetError) as refused:
        Workload.load(Settings(variant="impossible", task=("Python/0", "Python/38")))
    assert str(refused.value) == (
        f"--humanfix-task: Python/38 is left out of --humanfix-variant impossible: {IN_A_LOOP}. "
        "Leave it out of --humanfix-task (docs/trust.md#the-cheating-rate).")
