"""Jobs for tests that run a Python program in the sandbox: a candidate whose module runs a
script, and tests that call its entry point once (docs/sandbox.md#the-tests-and-the-candidate-apart)."""

from __future__ import annotations

from pytest_humanfix.sandbox.environment import Job
from pytest_humanfix.sandbox.program import python_job

# The tests of `script_job`: one call of the entry point, which answers 1.
ONE_CALL = "assert f() == 1\n"


def script_job(script: str, tests: str = ONE_CALL) -> Job:
    """The candidate's program runs `script` at its load, then defines `f`, which returns 1;
    `tests` (by default one call of `f`) run in their own process."""
    return python_job(f"{script}\n\ndef f():\n    return 1\n", tests, "f")
