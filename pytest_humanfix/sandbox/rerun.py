"""One task's executions under the limit calibrated for it, with a timeout checked once more,
alone, before it counts. Under load a correct but slow program can run past its limit for want
of CPU, so a timeout runs again under a machine-wide lock and the second verdict is kept
(`rerun`); an execution lost before its program started (`ExecutionLost`) runs again the same
way (`lost`), and lost twice is a SandboxError naming both.
See docs/sandbox.md#runs-again-before-they-count and docs/trust.md#timeouts-that-hold-under-load.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .environment import ExecutionLost, Job, Layer, Sandbox, SandboxError, Verdict

# One lock for every humanfix run on this machine: re-runs are alone across runs as well.
RERUN_LOCK = Path(tempfile.gettempdir()) / "humanfix-rerun.lock"


@contextmanager
def alone(lock: Path) -> Iterator[None]:
    """Holds the machine-wide re-run lock (waits for any other re-run to finish first)."""
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class TaskSandbox:
    """The process's sandbox, seen by one task: its calibrated limit and the re-run rule."""

    sandbox: Sandbox
    limit: float
    lock: Path = field(default=RERUN_LOCK)
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
        with alone(self.lock):
            verdict = self.sandbox.run(job, limit)
        verdict.rerun = True
        return verdict

    def run_again_after_loss(self, job: Job, limit: float, lost: str) -> Verdict:
        try:
            with alone(self.lock):
                verdict = self.sandbox.run(job, limit)
        except ExecutionLost as again:
            raise SandboxError(f"{lost}; run once more, alone: {again}") from None
        verdict.lost = lost
        return verdict

    def shutdown(self) -> None:
        """The process's sandbox outlives the task; the runner shuts it down."""
