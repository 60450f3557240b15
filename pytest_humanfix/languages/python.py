"""Python: run by the sandbox's own interpreter (warm or fresh executor), the candidate with
BigCode's prelude of imports, the tests in a process of their own that calls it
(docs/sandbox.md#the-tests-and-the-candidate-apart)."""

from __future__ import annotations

from ..dataset import Task
from ..sandbox.environment import Job
from ..sandbox.program import python_job
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
        return python_job(code, tests, task.entry_point, task.declaration, task.test_setup)
