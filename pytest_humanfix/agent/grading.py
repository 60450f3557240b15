"""Running a candidate and grading the final one: the tests a round may run, the hidden tests,
and the task's result with its flags and HumanEval+ verdict (docs/agent.md, docs/trust.md)."""

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
from .suspicion import suspicion_flags


def run_tests(ctx: RepairContext, code: str, tests: str) -> Verdict:
    if ctx.task.language == "python":
        tests = explained_tests(tests)
    return ctx.sandbox.run(LANGUAGES[ctx.task.language].job(code, tests, ctx.task))


def run_hidden(ctx: RepairContext, code: str) -> Verdict:
    """The verdict of the task's hidden tests."""
    return run_tests(ctx, code, ctx.task.test)


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
        graded = ran.verdict
    else:
        graded = run_hidden(ctx, code).to_dict()
    if attempts[index].status == "":  # passed the check, not run in a round: graded only
        attempts[index] = dataclasses.replace(attempts[index], status="graded")
    verdict = Verdict(**graded)
    flags = suspicious(ctx, code) if verdict.passed else []
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


def suspicious(ctx: RepairContext, code: str) -> list[str]:
    """How a candidate that passed may have tried to defeat the tests, read from its code: a
    second line behind the tests' process, which nothing of the candidate's reaches
    (docs/trust.md#fixes-that-defeat-the-tests-are-flagged). Other languages' code is read for
    the flags of their own (`Language.flags`)."""
    if ctx.task.language != "python":
        return LANGUAGES[ctx.task.language].flags(code, ctx.task.test)
    return suspicion_flags(code, ctx.task.test)
