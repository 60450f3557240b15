"""One task's executions under the limit calibrated for it, with a timeout checked once more
before it counts. Under load a correct but slow program can run past its limit for want of CPU,
so a timeout runs again under a larger limit (`rerun_limit`) and the second verdict is kept
(`rerun`); an execution lost before its program started (`ExecutionLost`) runs again under the
same limit (`lost`), and lost twice is a SandboxError naming both. Re-runs run beside whatever
else runs, as first runs do: the larger limit, not the machine to itself, is what gives a slow
program its second chance.
See docs/sandbox.md#runs-again-before-they-count and docs/trust.md#timeouts-that-hold-under-load.
"""

from __future__ import annotations

from dataclasses import dataclass

from .environment import ExecutionLost, Job, Layer, Sandbox, SandboxError, Verdict

# How much larger a re-run's limit is than the first run's. Beside CPU burners some honest
# references ran past their first limit, none past twice it; a loop costs its limit 1 +
# RERUN_FACTOR times over (docs/trust.md#timeouts-that-hold-under-load has the measurements).
RERUN_FACTOR = 2.0


def rerun_limit(limit: float, cap: float) -> float:
    """A re-run's limit: RERUN_FACTOR × the first, at most `cap`, never under the first."""
    return round(max(limit, min(cap, RERUN_FACTOR * limit)), 3)


@dataclass
class TaskSandbox:
    """The process's sandbox, seen by one task: its calibrated limit, the larger one a re-run
    after a timeout gets (the same where not given), and the re-run rule."""

    sandbox: Sandbox
    limit: float
    rerun_limit: float | None = None
    runs: int = 0  # the programs run, each once however often it ran: the task's sandbox_runs

    @property
    def layer(self) -> Layer:
        return self.sandbox.layer

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        limit = timeout or self.limit
        self.runs += 1
        try:
            verdict = self.sandbox.run(job, limit)
        except ExecutionLost as exc:
            return self.run_again_after_loss(job, limit, str(exc))
        if verdict.status != "timeout":
            return verdict
        verdict = self.sandbox.run(job, max(limit, self.rerun_limit or limit))
        verdict.rerun = True
        return verdict

    def run_again_after_loss(self, job: Job, limit: float, lost: str) -> Verdict:
        try:
            verdict = self.sandbox.run(job, limit)
        except ExecutionLost as again:
            raise SandboxError(f"{lost}; run once more: {again}") from None
        verdict.lost = lost
        return verdict

    def shutdown(self) -> None:
        """The process's sandbox outlives the task; the runner shuts it down."""
