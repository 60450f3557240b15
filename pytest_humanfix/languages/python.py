"""Python: run by the sandbox's own interpreter (warm or fresh executor), with BigCode's
prelude of imports before the candidate (docs/sandbox.md)."""

from __future__ import annotations

from ..dataset import Task
from ..sandbox.program import build_program
from .base import Language


class Python(Language):
    name = "python"
    title = "Python"
    fence = "python"
    timeout = 10.0
    stop_words = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\nassert",
                  "<|endoftext|>")
    function_end = "indent"  # BigCode's `check_fn`: the first unindented line leaves it

    def program(self, code: str, tests: str, task: Task) -> str:
        return build_program(code, tests, task.test_setup)
