"""Doubles for the repair agent's tests (unit/agent/ and runs/test_own_agent.py): replies of
each shape for Python/0, and a sandbox that keeps the tests the agent ran."""

from __future__ import annotations

from pytest_humanfix.dataset import Task
from pytest_humanfix.sandbox.environment import Job, Limits
from pytest_humanfix.sandbox.fresh import ProcessSandbox


def fenced(code: str) -> str:
    return f"Here is the fixed function:\n\n```python\n{code}```\n"


class Replies:
    """The shapes of reply the tests need for Python/0."""

    def __init__(self, task: Task) -> None:
        self.fixed = fenced(task.canonical_code)
        self.wrong = [fenced(task.buggy_code.replace("elem - elem2", f"elem - elem2 - {n}"))
                      for n in range(1, 4)]
        # The first wrong reply again, laid out differently and with a comment.
        self.wrong_again = fenced(task.buggy_code.replace(
            "distance = elem - elem2", "distance = (elem - elem2 - 1)  # subtract one"))
        self.syntax_error = fenced(
            f"def {task.entry_point}(numbers, threshold)\n    return False\n")
        self.no_code = (
            "<think>\nThe tests are long; I ran out of tokens before answering.\n</think>\n")
        self.bad_signature = fenced(f"def {task.entry_point}(numbers):\n    return False\n")
        # Passes the two docstring examples, fails the hidden tests.
        self.examples_only = fenced(task.declaration + "    return threshold < 0.4\n")


class CountingSandbox:
    """Keeps every execution the agent ran (`jobs`) and the tests' program of each
    (`programs`)."""

    def __init__(self) -> None:
        self.sandbox = ProcessSandbox(Limits(timeout=10))
        self.jobs: list[Job] = []
        self.programs: list[str] = []

    def run(self, job: Job):
        self.jobs.append(job)
        assert job.tests is not None
        self.programs.append(job.tests.program)
        return self.sandbox.run(job)
