"""What a HumanEval+ program's verdict says: the reference's times on each input (calibration),
an input stopped by its own limit (a timeout, re-run before it counts), and the failure to show
(docs/trust.md#humanevalfix-humanfix-tests-plus)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..sandbox.environment import Job, Layer, Sandbox, Verdict
from .checker import TIMEOUT_ERROR, TIMES


def reference_times(verdict: Verdict) -> dict[str, Any]:
    """What calibration keeps of the reference's run (plain JSON for the cache and the
    workers): its seconds on the whole program and its CPU seconds on each input; none where
    it did not pass, and each input then runs under the floor."""
    line = next((line for line in reversed(verdict.stdout.splitlines())
                 if line.startswith(TIMES + " ")), "")
    try:
        inputs = json.loads(line.removeprefix(TIMES + " ")) if verdict.passed else []
    except ValueError:  # cut by the output cap: ~8 characters an input, 16 KiB of them
        inputs = []
    return {"seconds": verdict.seconds, "inputs": inputs}


def is_reference_times(value: object) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("seconds"), (int, float))
            and isinstance(value.get("inputs"), list)
            and all(isinstance(t, (int, float)) for t in value["inputs"]))


def stopped_input(verdict: Verdict) -> str:
    """The checker's message for an input past its limit, "" if none was."""
    for line in reversed(verdict.stderr.splitlines()):
        if line.startswith(TIMEOUT_ERROR):
            return line.removeprefix(TIMEOUT_ERROR).removeprefix(":").strip() or \
                "a HumanEval+ input ran past its limit"
    return ""


@dataclass
class InputLimits:
    """A sandbox whose verdicts read an input stopped by its own limit as the timeout it is,
    so that, as a program past its whole limit, it runs once more before it counts
    (sandbox/rerun)."""

    sandbox: Sandbox

    @property
    def layer(self) -> Layer:
        return self.sandbox.layer

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        verdict = self.sandbox.run(job, timeout)
        if verdict.status == "failed" and stopped_input(verdict):
            verdict.status = "timeout"
        return verdict

    def shutdown(self) -> None:
        """The process's sandbox outlives the task; the runner shuts it down."""


def failure(verdict: Verdict) -> str:
    """What failed on HumanEval+: the input, the output and the expected one, or the input
    past its limit (the checker's own messages, without the statement that raised them), else
    the candidate's own error."""
    stopped = stopped_input(verdict)
    if stopped:
        return stopped + ("; re-run, it ran past it again" if verdict.rerun else "")
    marker = "AssertionError: HumanEval+ input "
    failure = verdict.first_failure()
    for line in failure.splitlines():
        if line.startswith(marker):
            return line.removeprefix("AssertionError: ")
    return failure
