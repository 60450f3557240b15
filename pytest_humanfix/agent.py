"""The repair loop: ask the model, extract its code, execute it in the sandbox."""

from __future__ import annotations

import difflib
import time

from .dataset import Task
from .extract import extract_code
from .models import Model
from .results import Attempt, TaskResult
from .sandbox import ProcessSandbox, build_program


def unified_diff(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="buggy", tofile="candidate"))


def repair_messages(task: Task) -> list[dict[str, str]]:
    user = (f"{task.declaration}{task.buggy_solution}\n\n{task.test}\n\n"
            f"Fix bugs in {task.entry_point}.")
    return [{"role": "user", "content": user}]


def repair(task: Task, model: Model, sandbox: ProcessSandbox) -> TaskResult:
    started = time.monotonic()
    begin = time.monotonic()
    generation = model.generate(repair_messages(task), task)
    generate_seconds = generation.seconds or time.monotonic() - begin
    code = extract_code(generation.text, task.entry_point, task.declaration)
    verdict = sandbox.run(build_program(code, task.test, task.test_setup))
    diff = unified_diff(task.buggy_code, code)
    attempt = Attempt(code=code, diff=diff, verdict=verdict.to_dict(),
                      prompt_tokens=generation.prompt_tokens,
                      completion_tokens=generation.completion_tokens,
                      generate_seconds=round(generate_seconds, 4),
                      execute_seconds=verdict.seconds)
    return TaskResult(
        task_id=task.task_id, entry_point=task.entry_point, bug_type=task.bug_type,
        outcome="fixed" if verdict.passed else "unfixed", code=code, diff=diff,
        verdict=verdict.to_dict(), failure="" if verdict.passed else verdict.first_failure(),
        attempts=[attempt], seconds=round(time.monotonic() - started, 4))
