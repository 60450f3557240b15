"""The two Python programs of an execution (docs/sandbox.md#the-tests-and-the-candidate-apart):
the candidate's, assembled as the BigCode harness assembles its candidates (its imports, then
the candidate), and the tests', which call it: the same imports, the task's own helpers (the
declaration before the entry point: `poly` for find_zero, `encode_cyclic` for decode_cyclic),
the test set-up and the tests. The tests use the task's helpers as the dataset wrote them, never
a candidate's version of them."""

from __future__ import annotations

import re

from .environment import Job, Side
from .inside import source

# The names the two programs have in their tracebacks.
PROGRAM_NAME = "program.py"
TESTS_NAME = "tests.py"

# The imports the BigCode evaluation harness puts before every Python candidate (IMPORT_HELPER).
PRELUDE = source("prelude.py").rstrip("\n")


def candidate_program(code: str) -> str:
    """The candidate's program, as the BigCode harness puts it before the tests."""
    return (PRELUDE + "\n" + code).strip() + "\n"


def task_helpers(declaration: str, entry_point: str) -> str:
    """The declaration's text before the entry point's `def`: its imports and helpers."""
    found = list(re.finditer(rf"(?m)^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(",
                             declaration))
    return declaration[:found[-1].start()] if found else declaration


def from_first_statement(tests: str) -> str:
    """The tests from their first unindented line. HumanEvalPack's Python/119 example test
    begins with indented lines, its reference's body twice: in one program with the candidate
    they ran on in the candidate's function; on their own they are no program."""
    lines = tests.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines)
                  if line.strip() and not line[:1].isspace()), len(lines))
    return "".join(lines[first:])


def caller_program(tests: str, declaration: str, entry_point: str, test_setup: str = "") -> str:
    """The tests' program: the imports, the task's helpers, its set-up, then the tests, whose
    entry point is the candidate across the pipe (`inside/tests.py`)."""
    parts = [PRELUDE, task_helpers(declaration, entry_point).strip(), test_setup,
             from_first_statement(tests)]
    return "\n".join(part for part in parts if part) + "\n"


def python_job(code: str, tests: str, entry_point: str, declaration: str = "",
               test_setup: str = "") -> Job:
    """An execution of the Python candidate `code` against `tests`, which call `entry_point`."""
    return Job(Side(candidate_program(code), PROGRAM_NAME),
               Side(caller_program(tests, declaration, entry_point, test_setup), TESTS_NAME),
               entry_point)


def build_program(code: str, test: str, test_setup: str = "") -> str:
    """The one program the BigCode harness runs (prelude, candidate, the task's test), for the
    benchmarks that compare with harnesses that run it so."""
    candidate = (PRELUDE + "\n" + code).strip()
    return candidate + "\n" + (test_setup + "\n" if test_setup else "") + test + "\n"
