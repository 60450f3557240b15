"""Running a candidate and grading the final one: the tests a round may run, the hidden tests
with the guard that spots a fix defeating them, and the task's result with its flags and
HumanEval+ verdict (docs/agent.md, docs/trust.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..languages import LANGUAGES
from ..plus import verdicts as plus_verdicts
from ..records import Attempt, TaskResult, attempt_round
from ..sandbox.environment import Verdict
from .context import RepairContext
from .extract import same_code
from .feedback import explained_tests
from .suspicion import guard_flag, guard_program, guarded_tests, suspicion_flags


def run_tests(ctx: RepairContext, code: str, tests: str) -> Verdict:
    if ctx.task.language == "python":
        tests = explained_tests(tests)
    return ctx.sandbox.run(LANGUAGES[ctx.task.language].program(code, tests, ctx.task))


def run_hidden(ctx: RepairContext, code: str) -> tuple[Verdict, str | None]:
    """The verdict of the task's hidden tests, and the guard's flag from the same execution
    ("" when it found nothing; None when the tests could not hold the guard). A run the guard
    stopped proved nothing about the tests: they run again without it for the verdict."""
    guarded = guarded_tests(ctx.task)
    if guarded is None:
        return run_tests(ctx, code, ctx.task.test), None
    verdict = run_tests(ctx, code, guarded)
    flag = guard_flag(verdict)
    if flag:
        verdict = run_tests(ctx, code, ctx.task.test)
    return verdict, flag


def final_candidate(attempts: list[Attempt]) -> int:
    """Index of the attempt that is graded: the latest one that passed the check (the agent
    would not submit code it knows cannot run), else the latest one."""
    for index in range(len(attempts) - 1, -1, -1):
        if attempts[index].status != "rejected":
            return index
    return len(attempts) - 1


def graded(ctx: RepairContext, attempts: list[Attempt], index: int) -> TaskResult:
    """The task's result with attempt `index` as the final candidate, graded on the hidden
    tests (and HumanEval+), reusing an execution of the same code where there is one."""
    attempts = list(attempts)
    code = attempts[index].code
    ran = next((a for a in attempts
                if a.tests == "test" and a.verdict and same_code(a.code, code)), None)
    if ran is not None and ran.verdict is not None:
        graded, guard = ran.verdict, ran.guard
    else:
        hidden, guard = run_hidden(ctx, code)
        graded = hidden.to_dict()
    if attempts[index].status == "":  # passed the check, not run in a round: graded only
        attempts[index] = dataclasses.replace(attempts[index], status="graded", guard=guard)
    verdict = Verdict(**graded)
    flags = suspicious(ctx, code, guard) if verdict.passed else []
    fixed = verdict.passed and not (flags and ctx.config.strict)
    if not verdict.passed:
        failure = verdict.first_failure()
    else:
        failure = "" if fixed else "flagged, scored not fixed (--humanfix-strict): " + \
            "; ".join(flags)
    # Recorded here, where the outcome is decided, so that pass@1 by round needs no reading
    # of attempts afterwards.
    fixed_round = attempt_round(vars(attempts[index]), index) if fixed else None
    plus: dict[str, Any] = {}
    if ctx.plus is not None:
        # Run whatever the hidden verdict: a candidate that failed them still shows whether
        # HumanEval+ tells it apart (the buggy control must fail every task there).
        on_plus = ctx.plus(code)
        plus = {"plus_verdict": on_plus.to_dict(),
                "plus_outcome": "fixed" if fixed and on_plus.passed else "unfixed",
                "plus_failure": "" if on_plus.passed else plus_verdicts.failure(on_plus)}
    result = TaskResult(
        task_id=ctx.task.task_id, entry_point=ctx.task.entry_point, bug_type=ctx.task.bug_type,
        outcome="fixed" if fixed else "unfixed", code=code,
        diff=attempts[index].diff, verdict=graded, failure=failure, attempts=attempts,
        final_attempt=index, fixed_round=fixed_round, flags=flags, **plus)
    return result


def suspicious(ctx: RepairContext, code: str, guard: str | None) -> list[str]:
    """How a candidate that passed may have defeated the tests: read from its code, else shown
    by the guard of its graded run (`guard`), or, where that run had none, by a second run of
    the tests with the entry point's return values guarded. Other languages' code is read
    for the flags of their own (`Language.flags`); their tests hold no guard."""
    if ctx.task.language != "python":
        return LANGUAGES[ctx.task.language].flags(code, ctx.task.test)
    flags = suspicion_flags(code, ctx.task.test)
    if not flags:
        if guard is None:
            guard = guard_flag(ctx.sandbox.run(guard_program(code, ctx.task)))
        flags = [guard] if guard else []
    return flags
