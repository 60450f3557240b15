"""Python: run by the sandbox's own interpreter (warm or fresh executor), the candidate with
BigCode's prelude of imports, the tests in a process of their own that calls it
(docs/sandbox.md#the-tests-and-the-candidate-apart)."""

from __future__ import annotations

from ..dataset import Task
from ..sandbox.environment import Job, Side
from ..sandbox.fresh import PROGRAM_NAME, TESTS_NAME
from ..sandbox.program import candidate_program, tests_program
from .base import Language


class Python(Language):
    name = "python"
    title = "Python"
    fence = "python"
    timeout = 10.0
    stop_words = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\nassert",
                  "<|endoftext|>")
    function_end = "indent"  # BigCode's `check_fn`: the first unindented line leaves it

    def job(self, code: str, tests: str, task: Task) -> Job:
        return Job(Side(candidate_program(code), PROGRAM_NAME),
                   Side(tests_program(tests, task.declaration, task.entry_point,
                                      task.test_setup), TESTS_NAME),
                   task.entry_point)
