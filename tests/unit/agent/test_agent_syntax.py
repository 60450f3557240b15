"""The check before execution for the brace languages (agent/syntax.py, through
agent/precheck.py): tree-sitter parses the candidate and finds the entry point with its declared
parameters. Every canonical solution of the shared data must pass it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_humanfix.agent.precheck import accepts_declared_calls, check_candidate
from pytest_humanfix.agent.syntax import available, check_braced
from pytest_humanfix.dataset import Task, load_tasks

BRACED = ("js", "java", "go", "cpp", "rust")


@pytest.fixture(scope="module", autouse=True)
def grammars() -> None:
    """The test extra installs every grammar: one missing is an error here, never a skip."""
    missing = [name for name in BRACED if not available(name)]
    if missing:
        pytest.fail(f"tree-sitter grammars missing for {', '.join(missing)}: install "
                    "pytest-humanfix[languages] (the test extra has it)", pytrace=False)


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, list[Task]]:
    return {name: load_tasks(str(dataset.parent / f"humanevalpack-{name}.jsonl"))
            for name in BRACED}


@pytest.mark.parametrize("name", BRACED)
def test_no_canonical_solution_is_refused(tasks, name):
    assert [t.task_id for t in tasks[name] if check_candidate(t.canonical_code, t)] == []


def test_the_buggy_solutions_that_do_not_parse_are_the_ones_refused(tasks):
    refused = {t.task_id: check_candidate(t.buggy_code, t)
               for name in BRACED for t in tasks[name] if check_candidate(t.buggy_code, t)}
    # Their bugs are syntax: a `+` missing in JavaScript/113, Go's '__' and `+=` on a string.
    assert sorted(refused) == ["Go/140", "Go/144", "JavaScript/113"]
    assert all(reason.startswith("syntax error at line ") for reason in refused.values())


@pytest.mark.parametrize("name", ["js", "java"])
def test_a_missing_closing_brace_is_named_with_its_line(tasks, name):
    task = tasks[name][0]
    reason = check_candidate(task.canonical_code.rstrip().removesuffix("}"), task)
    assert reason.startswith("missing `}` at line ")


def test_a_go_reply_cut_before_its_last_brace_is_a_syntax_error(tasks):
    task = tasks["go"][0]
    cut = task.canonical_code.rstrip().removesuffix("}")  # ends with a newline
    assert check_candidate(cut, task).startswith("missing `}`")


@pytest.mark.parametrize("name", BRACED)
def test_a_renamed_entry_point_is_not_defined(tasks, name):
    task = tasks[name][0]
    declared = "HasCloseElements" if name == "go" else task.entry_point
    renamed = task.canonical_code.replace(declared, "closeEnough")
    assert check_candidate(renamed, task) == f"it does not define the function `{declared}`."


@pytest.mark.parametrize(("name", "declared", "fewer"), [
    ("js", "(numbers, threshold)", "(numbers)"),
    ("go", "(numbers []float64, threshold float64)", "(numbers []float64)"),
    ("rust", "(numbers:Vec<f32>, threshold: f32)", "(numbers:Vec<f32>)"),
])
def test_a_parameter_fewer_than_declared_is_refused_with_both_counts(tasks, name, declared,
                                                                     fewer):
    task = tasks[name][0]
    assert declared in task.canonical_code
    reason = check_candidate(task.canonical_code.replace(declared, fewer, 1), task)
    assert "takes 1 parameter(s); the declaration" in reason and "takes 2." in reason


def test_go_parameters_sharing_a_type_count_one_each(tasks):
    task = tasks["go"][0]
    shared = task.canonical_code.replace("(numbers []float64, threshold float64)",
                                         "(numbers []float64, threshold, extra float64)")
    assert "takes 3 parameter(s)" in check_braced(shared, task)


def arguments(signature: str) -> ast.arguments:
    function = ast.parse(f"def f({signature}): pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return function.args


@pytest.mark.parametrize(("candidate", "accepted"), [
    ("a, b", True),
    ("x, y", True),                 # renamed
    ("a, b, c=1", True),            # an extra one with a default
    ("*args", True),
    ("a, *rest", True),
    ("a, b, *, key=None", True),    # keyword-only with a default
    ("a", False),
    ("a, b, c", False),             # an extra one the tests never pass
    ("a, b, *, key", False),        # keyword-only without a default
])
def test_calls_by_position_to_the_declaration_must_bind_to_the_candidate(candidate, accepted):
    assert accepts_declared_calls(arguments(candidate), arguments("a, b")) is accepted


def test_a_keyword_only_parameter_the_declaration_has_may_stay_without_default():
    assert accepts_declared_calls(arguments("a, *, key"), arguments("a, *, key"))
