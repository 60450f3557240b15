"""A task's samples under --humanfix-samples N taken as one task result: the first sample's
details and every sample's outcome (docs/reports.md)."""

from __future__ import annotations

from ..records import Sample, TaskResult


def sampled(results: list[TaskResult]) -> TaskResult:
    """The task's result: its one sample's, or the several combined."""
    return results[0] if len(results) == 1 else combine_samples(results)


def combine_samples(results: list[TaskResult]) -> TaskResult:
    """One task result from several samples: the first sample's details, every sample's
    outcome. A harness error in any sample makes the task an error (scored not fixed)."""
    first = results[0]
    failed = next((r for r in results if r.outcome == "error"), None)
    return TaskResult(
        task_id=first.task_id, entry_point=first.entry_point, bug_type=first.bug_type,
        outcome="error" if failed else first.outcome, code=first.code, diff=first.diff,
        verdict=first.verdict, failure=first.failure,
        error=f"sample {results.index(failed) + 1}: {failed.error}" if failed else "",
        attempts=first.attempts, final_attempt=first.final_attempt,
        fixed_round=first.fixed_round, seconds=round(sum(r.seconds for r in results), 4),
        samples=[Sample.of(r) for r in results], flags=first.flags,
        sandbox_runs=sum(r.sandbox_runs for r in results),
        plus_outcome=first.plus_outcome, plus_verdict=first.plus_verdict,
        plus_failure=first.plus_failure, agent_error=first.agent_error)
